package record

import (
	"time"

	"github.com/harness-dev/harness/artifacts"
)

// Files of a skill store (.harness/skills-store by default): every version
// of every skill that was ever promoted, installed or approved, kept
// immutable under versions/<name>/<digest-hex>/, each skill's history in
// versions/<name>/history.json, and one hash-chained audit log.
const (
	FileSkillsAudit     = "skills-audit.jsonl"
	FileSkillsAuditHead = "skills-audit.head.json"
	DirSkillVersions    = "versions"
	FileSkillHistory    = "history.json"

	TypeSkillHistory     = "harness.skill-history"
	TypeSkillsAuditHead  = "harness.skills-audit-head"
	SkillStoreVersion    = 1
	TypeSkillForge       = "harness.skill-forge"
	FileSkillForge       = "skill-forge.json"
	SkillForgeVersion    = 1
	DirSkillForgeDrafts  = "skill-forge"
	MaxSkillForgeAttempt = 3
)

// Skill lifecycle steps: the audit log's event types.
const (
	SkillCreatedDraft = "skill.created-draft"
	SkillTested       = "skill.tested"
	SkillPromoted     = "skill.promoted"
	SkillPending      = "skill.pending"
	SkillApproved     = "skill.approved"
	SkillRejected     = "skill.rejected"
	SkillInstalled    = "skill.installed"
	SkillRolledBack   = "skill.rolled-back"
	SkillRemoved      = "skill.removed"
)

// States of a stored version.
const (
	VersionLive       = "live"
	VersionSuperseded = "superseded"
	VersionPending    = "pending"
	VersionRejected   = "rejected"
	VersionRemoved    = "removed"
)

// Actor is who or what made a change: an operator's command, or a run
// (its id and the turn of the tool call).
type Actor struct {
	Kind    string `json:"kind"` // operator, run
	Command string `json:"command,omitempty"`
	RunID   string `json:"runId,omitempty"`
	Turn    int    `json:"turn,omitempty"`
	CallID  string `json:"callId,omitempty"`
	// LearnedFrom is the run a reflection studied to propose the skill.
	LearnedFrom string `json:"learnedFrom,omitempty"`
}

// SkillHistory is versions/<name>/history.json.
type SkillHistory struct {
	artifacts.Envelope
	Name string `json:"name"`
	// Root is the live skills root the skill is promoted into.
	Root string `json:"root"`
	// Current is the live version, empty when the skill is removed or
	// was never promoted.
	Current  artifacts.Digest `json:"current,omitempty"`
	Versions []SkillVersion   `json:"versions"`
}

// SkillVersion is one immutable version, named by its tree digest.
type SkillVersion struct {
	Version   artifacts.Digest `json:"version"`
	Parent    artifacts.Digest `json:"parent,omitempty"`
	State     string           `json:"state"`
	MadeBy    Actor            `json:"madeBy"`
	CreatedAt time.Time        `json:"createdAt"`
	Source    string           `json:"source,omitempty"`
	Risk      string           `json:"risk"`
	Findings  []Finding        `json:"findings"`
	// Decision is the approval or rejection of a pending version.
	DecidedAt *time.Time `json:"decidedAt,omitempty"`
	DecidedBy *Actor     `json:"decidedBy,omitempty"`
	Reason    string     `json:"reason,omitempty"`
	// Eval is what the draft's own evals came to, when SkillForge ran
	// them against a --forge-min-pass-rate gate: the numbers a person
	// deciding on a pending version reads.
	Eval *SkillEval `json:"eval,omitempty"`
	// Lock is the entry the root's skills.lock.json holds while this
	// version is live: kept with a pending version so that approving it
	// pins it, and with every other so that a rollback pins what it makes
	// live. Nil for a version no lock entry describes (SkillForge's).
	Lock *SkillLockEntry `json:"lock,omitempty"`
}

// SkillAuditEvent is the data of one line of skills-audit.jsonl.
type SkillAuditEvent struct {
	Skill   string           `json:"skill"`
	Version artifacts.Digest `json:"version,omitempty"`
	Parent  artifacts.Digest `json:"parent,omitempty"`
	Actor   Actor            `json:"actor"`
	Risk    string           `json:"risk,omitempty"`
	Reason  string           `json:"reason,omitempty"`
	Detail  string           `json:"detail,omitempty"`
}

// SkillsAuditHead is skills-audit.head.json: the sequence number and
// digest of the last audit line, rewritten after every append, so that a
// removed or edited last line is caught as well as any before it.
type SkillsAuditHead struct {
	artifacts.Envelope
	Seq  int64            `json:"seq"`
	Head artifacts.Digest `json:"head"`
}

// SkillForge is skill-forge.json in a run directory: every create_skill
// and compose_skills attempt of the run, what was checked and what came
// of it.
type SkillForge struct {
	artifacts.Envelope
	Attempts []ForgeAttempt `json:"attempts"`
}

// Outcomes of a forge attempt.
const (
	ForgeRefused     = "refused"      // not even written: attempts exhausted, a name taken, a bad path
	ForgeInvalid     = "invalid"      // written, but validation or the manifest failed
	ForgeTestsFailed = "tests_failed" // valid, but a test did not pass
	ForgePromoted    = "promoted"     // live in the forge root
	ForgePending     = "pending"      // waits for harness skills approve
)

// ForgeAttempt is one call of create_skill or compose_skills.
type ForgeAttempt struct {
	Skill   string    `json:"skill"`
	Attempt int       `json:"attempt"`
	Tool    string    `json:"tool"`
	CallID  string    `json:"callId,omitempty"`
	Turn    int       `json:"turn,omitempty"`
	Time    time.Time `json:"time"`
	Outcome string    `json:"outcome"`
	// Draft is the staged draft, relative to the run directory.
	Draft       string            `json:"draft,omitempty"`
	SkillDigest artifacts.Digest  `json:"skillDigest,omitempty"`
	Version     artifacts.Digest  `json:"version,omitempty"`
	Risk        string            `json:"risk,omitempty"`
	Findings    []Finding         `json:"findings"`
	Diagnostics []string          `json:"diagnostics"`
	Tests       []ForgeTestResult `json:"tests"`
	Composes    []string          `json:"composes,omitempty"`
	// Eval is the draft's evals against the run's --forge-min-pass-rate:
	// set only when the draft ships evals and the run has that gate.
	Eval *SkillEval `json:"eval,omitempty"`
}

// SkillEval is what a draft's own evals (evals/evals.json or
// evals/evals.yaml) came to on the run's model, held to the run's
// --forge-min-pass-rate. Met is the forge's decision; a version whose
// evals did not meet it, or could not run, waits for a person.
type SkillEval struct {
	// MinPassRate is the gate: with_skill's mean pass rate at least this.
	MinPassRate float64 `json:"minPassRate"`
	// PassRate is with_skill's mean pass rate over N graded cells (nil
	// when none was graded); WithoutSkill is without_skill's, for
	// comparison.
	PassRate     *float64 `json:"passRate,omitempty"`
	N            int      `json:"n"`
	WithoutSkill *float64 `json:"withoutSkillPassRate,omitempty"`
	Met          bool     `json:"met"`
	// Status is the eval's own (passed, failed, incomplete); "" when it
	// did not run.
	Status string `json:"status,omitempty"`
	// Dir is the eval directory (absolute): eval-result.json, the
	// gradings and every cell's run, for `harness report` or a resume.
	Dir string `json:"dir,omitempty"`
	// Reason says, when the gate was not met, why: the numbers, or what
	// kept the evals from running.
	Reason string `json:"reason,omitempty"`
}

// ForgeTestResult is one test of a draft, run in the sandbox.
type ForgeTestResult struct {
	Script     string   `json:"script"`
	Args       []string `json:"args"`
	Passed     bool     `json:"passed"`
	Failure    string   `json:"failure,omitempty"`
	ExitCode   int      `json:"exitCode"`
	Stdout     string   `json:"stdout"`
	Stderr     string   `json:"stderr"`
	Truncated  bool     `json:"truncated,omitempty"`
	Backend    string   `json:"sandboxBackend"`
	DurationMs int64    `json:"durationMs"`
	// Grant is what the test was given (the draft's manifest) and what
	// enforced it.
	Grant *Grant `json:"grant,omitempty"`
}

// SkillCreated is the data of a run's skill.created event: a draft of
// this run that passed, or a skill install_skill installed, stored live or
// pending. Resume does not count a skill the run itself promoted as drift.
type SkillCreated struct {
	Skill   string           `json:"skill"`
	Version artifacts.Digest `json:"version"`
	Root    string           `json:"root"`
	Outcome string           `json:"outcome"`
	CallID  string           `json:"callId,omitempty"`
	// From, for an installed skill, is the index it was found in and the
	// source it was added from.
	From   string `json:"from,omitempty"`
	Source string `json:"source,omitempty"`
}

// SkillsDiscovered is the data of a skills.discovered event: a
// discover_skills search and what it offered the model.
type SkillsDiscovered struct {
	Turn     int               `json:"turn"`
	CallID   string            `json:"callId"`
	Query    string            `json:"query"`
	Source   string            `json:"source"`
	Results  []DiscoveredSkill `json:"results"`
	Warnings []string          `json:"warnings,omitempty"`
}

// DiscoveredSkill is one result of a discover_skills search.
type DiscoveredSkill struct {
	Name      string  `json:"name"`
	From      string  `json:"from"`
	Source    string  `json:"source"`
	Ref       string  `json:"ref,omitempty"`
	Installed string  `json:"installed,omitempty"`
	Score     float64 `json:"score"`
}
