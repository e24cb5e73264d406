package run

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"

	"github.com/harness-dev/harness/gate"
	"github.com/harness-dev/harness/internal/termsafe"
	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/rundir"
	"github.com/harness-dev/harness/skills"
)

// requestApprovals journals each pending call not already waiting, and
// the calls waiting inside this run's delegate_task children (as
// CHILD_ID/CALL_ID), and keeps the list for result.json.
func (r *runner) requestApprovals(pending []loop.ToolCall, turn int) error {
	var reqs []record.ApprovalRequested
	for _, c := range pending {
		why, s := r.approvals.Why(c)
		req := record.ApprovalRequested{Turn: turn, CallID: c.ID, Tool: c.Name, Arguments: c.Arguments, Why: why}
		if s != nil {
			req.Skill, req.SkillDigest, req.SkillTreeDigest = s.Name, string(s.Digest), string(s.TreeDigest)
		}
		reqs = append(reqs, req)
	}
	for _, req := range r.childWaiting {
		req.Turn = turn
		reqs = append(reqs, req)
	}
	for _, req := range reqs {
		if !r.approvals.Requested(req.CallID) {
			if _, err := r.journal.Append(record.EventApprovalRequested, req); err != nil {
				return err
			}
			r.approvals.Request(req)
		}
		r.pendingApprovals = append(r.pendingApprovals, record.PendingApproval{CallID: req.CallID, Tool: req.Tool, Arguments: r.redact.String(req.Arguments), Skill: req.Skill, Why: req.Why, Child: req.Child})
		r.progress("awaiting approval: %s (%s): %s", req.CallID, req.Tool, req.Why)
	}
	return nil
}

// decideApprovals checks the operator's --approve and --deny against the
// calls the stopped run left waiting, and journals each decision before
// anything runs (checkDecisions has refused a call that is not waiting,
// or one named twice); then the decisions a parent run handed down about
// this child's calls. One whose skill or arguments changed since it was
// requested is drift. A decision about a call waiting in a child is
// journaled here and handed to the child when delegate_task resumes it,
// whose own resume checks it against its own journal.
func (r *runner) decideApprovals(d decisions) error {
	st := r.resumed
	actor := d.actor
	if actor == "" {
		actor = osUser()
	}
	var all []record.ApprovalDecided
	for _, id := range d.approve {
		all = append(all, record.ApprovalDecided{CallID: id, Decision: record.DecisionApproved, Actor: actor})
	}
	for _, id := range d.deny {
		all = append(all, record.ApprovalDecided{CallID: id, Decision: record.DecisionDenied, Actor: actor, Reason: d.reason})
	}
	all = append(all, d.inherited...)
	// Every decision is checked before any is journaled: one refused
	// decides none of them.
	for _, dec := range all {
		req := st.ApprovalsRequested[dec.CallID]
		if req.Child != "" {
			// The child's journal holds the skill digests the request
			// named; a drifted skill is refused here, before the
			// decision is journaled, not by the child once this run's
			// model has been told the child failed.
			var err error
			if req, err = r.childRequest(req); err != nil {
				return err
			}
		}
		if err := r.checkApproval(dec.CallID, req); err != nil {
			return err
		}
	}
	for _, dec := range all {
		req := st.ApprovalsRequested[dec.CallID]
		dec.Tool, dec.At = req.Tool, r.now().UTC()
		if dec.Decision != record.DecisionDenied {
			dec.Reason = ""
		}
		if _, err := r.journal.Append(record.EventApprovalDecided, dec); err != nil {
			return err
		}
		r.approvals.Decide(dec)
		r.progress("%s %s (%s) by %s", dec.Decision, dec.CallID, req.Tool, dec.Actor)
	}
	return nil
}

// checkApproval refuses a decision about a call whose skill (on disk,
// the drift check's scan, when there is one: the run's snapshot stays
// what it started with under --allow-drift, and a person approved the
// version the request named) or arguments are not what approval was
// requested for.
func (r *runner) checkApproval(id string, req record.ApprovalRequested) error {
	reg := r.registry
	if r.onDisk != nil {
		reg = r.onDisk
	}
	if req.Skill != "" && reg != nil {
		// A request recorded before the tree digest was has only the
		// SKILL.md digest to compare.
		if s, ok := reg.Lookup(req.Skill); !ok || string(s.Digest) != req.SkillDigest || req.SkillTreeDigest != "" && string(s.TreeDigest) != req.SkillTreeDigest {
			r.driftRefused = true
			return outcome.Policy("approval_drift", "call %s runs skill %s, which is not the version it was when approval was requested (digest %s); nothing was run", id, req.Skill, req.SkillDigest)
		}
	}
	for _, c := range loop.PendingCalls(r.resumed.Messages) {
		if c.ID == id && c.Arguments != req.Arguments {
			r.driftRefused = true
			return outcome.Policy("approval_drift", "call %s's arguments are not the ones approval was requested for; nothing was run", id)
		}
	}
	return nil
}

// childRequest is the request for a call waiting in a delegate_task
// child, as the child's own verified journal holds it.
func (r *runner) childRequest(req record.ApprovalRequested) (record.ApprovalRequested, error) {
	dir := filepath.Join(r.res.runDir, filepath.FromSlash(req.Child))
	id := req.CallID[strings.LastIndex(req.CallID, "/")+1:]
	m, err := record.ReadManifest(dir)
	if err != nil {
		return req, fmt.Errorf("call %s waits in child run %s, which cannot be read: %w", req.CallID, req.Child, err)
	}
	st, err := rundir.Open(dir, m, r.opts.RunKey)
	if err != nil {
		return req, err
	}
	child, ok := st.ApprovalsRequested[id]
	if !ok {
		return req, outcome.Policy("approval_unknown", "call %s is not waiting in child run %s: its journal holds no request for %s; nothing was decided", req.CallID, req.Child, id)
	}
	return child, nil
}

// osUser names who decided when --actor is not given.
func osUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "unknown"
}

// decisions are a resume's --approve, --deny, --reason and --actor, and
// the decisions a parent run handed down about this child's calls.
type decisions struct {
	approve, deny []string
	reason, actor string
	inherited     []record.ApprovalDecided
}

func (d decisions) any() bool { return len(d.approve)+len(d.deny)+len(d.inherited) > 0 }

// stillWaiting keeps of a parent's decisions those about calls that wait
// here: the others were handed down by an earlier resume, and this run's
// journal holds them.
func stillWaiting(st *rundir.State, inherited []record.ApprovalDecided) []record.ApprovalDecided {
	waiting := map[string]bool{}
	for _, w := range st.Waiting() {
		waiting[w.CallID] = true
	}
	var out []record.ApprovalDecided
	for _, d := range inherited {
		if waiting[d.CallID] {
			out = append(out, d)
		}
	}
	return out
}

// checkDecisions refuses, before anything is written, a set of decisions
// that is not one decision for each of some waiting calls: a call named
// twice (approved twice, or approved and denied), an empty id, or a call
// that is not waiting. All of them are checked first, so a refused set
// journals none of its decisions.
func checkDecisions(st *rundir.State, d decisions, runID string) error {
	waiting := st.Waiting()
	seen := map[string]string{}
	for i, id := range append(slices.Clone(d.approve), d.deny...) {
		flag := "--approve"
		if i >= len(d.approve) {
			flag = "--deny"
		}
		if id == "" {
			return outcome.Usage("approval_unknown", "%s needs a CALL_ID (`harness approvals` lists the waiting calls)", flag)
		}
		if prev, dup := seen[id]; dup {
			return outcome.Usage("approval_conflict", "call %s is named by %s and by %s: decide each call once; nothing was decided", termsafe.Escape(id), prev, flag)
		}
		seen[id] = flag
	}
	for _, id := range append(slices.Clone(d.approve), d.deny...) {
		if !slices.ContainsFunc(waiting, func(w record.ApprovalRequested) bool { return w.CallID == id }) {
			var ids []string
			for _, w := range waiting {
				ids = append(ids, w.CallID)
			}
			list := strings.Join(ids, ", ")
			if list == "" {
				list = "none"
			}
			return outcome.Usage("approval_unknown", "call %s is not waiting for approval in run %s (waiting: %s); nothing was decided", termsafe.Escape(id), runID, termsafe.Escape(list))
		}
	}
	return nil
}

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
