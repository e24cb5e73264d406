package record

import "time"

// Journal events of calls that wait for a person.
const (
	EventApprovalRequested = "approval.requested"
	EventApprovalDecided   = "approval.decided"
)

// Decisions a person gives.
const (
	DecisionApproved = "approved"
	DecisionDenied   = "denied"
)

// ApprovalRequested is the data of approval.requested: a call that was not
// started because a person must confirm it first.
type ApprovalRequested struct {
	Turn      int    `json:"turn"`
	CallID    string `json:"callId"`
	Tool      string `json:"tool"`
	Arguments string `json:"arguments"`
	// Skill is the skill whose code the call runs, when there is one,
	// SkillDigest its digest (SKILL.md) and SkillTreeDigest the digest of
	// all its files in the run's snapshot: approving after either changed
	// is drift.
	Skill           string `json:"skill,omitempty"`
	SkillDigest     string `json:"skillDigest,omitempty"`
	SkillTreeDigest string `json:"skillTreeDigest,omitempty"`
	// Why names what asked for a person: the operator's --confirm-tool
	// pattern, or the skill's metadata.harness.destructive.
	Why string `json:"why"`
	// Child, for a call waiting inside a delegate_task child run, is the
	// child's directory relative to this run's; CallID is then
	// CHILD_ID/CALL_ID, and the child's own journal holds its request.
	Child string `json:"child,omitempty"`
}

// ApprovalDecided is the data of approval.decided.
type ApprovalDecided struct {
	CallID   string    `json:"callId"`
	Tool     string    `json:"tool"`
	Decision string    `json:"decision"` // approved | denied
	Actor    string    `json:"actor"`
	Reason   string    `json:"reason,omitempty"`
	At       time.Time `json:"at"`
}

// PendingApproval is one call result.json lists for a run awaiting a person.
type PendingApproval struct {
	CallID    string `json:"callId"`
	Tool      string `json:"tool"`
	Arguments string `json:"arguments"`
	Skill     string `json:"skill,omitempty"`
	Why       string `json:"why"`
	// Child is the delegate_task child run the call waits in, as in
	// ApprovalRequested.
	Child string `json:"child,omitempty"`
}
