package run

import (
	"github.com/harness-dev/harness/approval"
	"github.com/harness-dev/harness/gate"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/skills"
)

// newApprovals is the run's approver, continuing what a resumed run's
// journal holds.
func (r *runner) newApprovals() *gate.Approvals {
	var requested map[string]record.ApprovalRequested
	var decided map[string]record.ApprovalDecided
	if st := r.resumed; st != nil {
		requested, decided = st.ApprovalsRequested, st.ApprovalsDecided
	}
	a := gate.NewApprovals(r.opts.ConfirmTools, func() *skills.Registry { return r.registry }, requested, decided)
	if r.mcp != nil {
		a.MCPSkill = r.mcp.SkillOf
		r.mcp.RequireApproval(a.Approved)
	}
	return a
}

// approvalRun is the run as approval journals the calls that wait in it
// and a person's decisions about them.
func (r *runner) approvalRun() approval.Run {
	reg := r.registry
	if r.onDisk != nil {
		reg = r.onDisk
	}
	return approval.Run{Journal: r.journal, Approvals: r.approvals, Redact: r.redact, Progress: r.progress, Now: r.now,
		Dir: r.res.runDir, Key: r.opts.RunKey, Resumed: r.resumed, Skills: reg}
}
