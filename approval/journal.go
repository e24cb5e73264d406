package approval

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/gate"
	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/rundir"
	"github.com/harness-dev/harness/skills"
)

// Run is the run whose calls wait: what journaling their requests and a
// person's decisions needs of it.
type Run struct {
	Journal   *artifacts.Journal
	Approvals *gate.Approvals
	Redact    *artifacts.Redactor
	Progress  func(format string, args ...any)
	Now       func() time.Time
	// Dir and Key are the run directory and its seal key: a call waiting
	// in a delegate_task child is read from the child's verified journal
	// beneath Dir.
	Dir string
	Key []byte
	// Resumed is the stopped run rebuilt from its journal (Decide).
	Resumed *rundir.State
	// Skills are what a decision's skill is held to: as the resume's drift
	// check found them on disk when it did, else the run's snapshot.
	Skills *skills.Registry
}

// Request journals each pending call not already waiting, and the calls
// waiting inside the run's delegate_task children (childWaiting, as
// CHILD_ID/CALL_ID), and returns the list for result.json (as far as it
// got, with the error of a journal append that failed).
func (r Run) Request(pending []loop.ToolCall, childWaiting []record.ApprovalRequested, turn int) ([]record.PendingApproval, error) {
	var out []record.PendingApproval
	var reqs []record.ApprovalRequested
	for _, c := range pending {
		why, s := r.Approvals.Why(c)
		req := record.ApprovalRequested{Turn: turn, CallID: c.ID, Tool: c.Name, Arguments: c.Arguments, Why: why}
		if s != nil {
			req.Skill, req.SkillDigest, req.SkillTreeDigest = s.Name, string(s.Digest), string(s.TreeDigest)
		}
		reqs = append(reqs, req)
	}
	for _, req := range childWaiting {
		req.Turn = turn
		reqs = append(reqs, req)
	}
	for _, req := range reqs {
		if !r.Approvals.Requested(req.CallID) {
			if _, err := r.Journal.Append(record.EventApprovalRequested, req); err != nil {
				return out, err
			}
			r.Approvals.Request(req)
		}
		out = append(out, record.PendingApproval{CallID: req.CallID, Tool: req.Tool, Arguments: r.Redact.String(req.Arguments), Skill: req.Skill, Why: req.Why, Child: req.Child})
		r.Progress("awaiting approval: %s (%s): %s", req.CallID, req.Tool, req.Why)
	}
	return out, nil
}

// Decide checks the operator's --approve and --deny against the
// calls the stopped run left waiting, and journals each decision before
// anything runs (Check has refused a call that is not waiting,
// or one named twice); then the decisions a parent run handed down about
// this child's calls. One whose skill or arguments changed since it was
// requested is drift. A decision about a call waiting in a child is
// journaled here and handed to the child when delegate_task resumes it,
// whose own resume checks it against its own journal.
func (r Run) Decide(d Decisions) error {
	st := r.Resumed
	actor := d.Actor
	if actor == "" {
		actor = osUser()
	}
	var all []record.ApprovalDecided
	for _, id := range d.Approve {
		all = append(all, record.ApprovalDecided{CallID: id, Decision: record.DecisionApproved, Actor: actor})
	}
	for _, id := range d.Deny {
		all = append(all, record.ApprovalDecided{CallID: id, Decision: record.DecisionDenied, Actor: actor, Reason: d.Reason})
	}
	all = append(all, d.Inherited...)
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
		dec.Tool, dec.At = req.Tool, r.Now().UTC()
		if dec.Decision != record.DecisionDenied {
			dec.Reason = ""
		}
		if _, err := r.Journal.Append(record.EventApprovalDecided, dec); err != nil {
			return err
		}
		r.Approvals.Decide(dec)
		r.Progress("%s %s (%s) by %s", dec.Decision, dec.CallID, req.Tool, dec.Actor)
	}
	return nil
}

// checkApproval refuses a decision about a call whose skill (on disk,
// the drift check's scan, when there is one: the run's snapshot stays
// what it started with under --allow-drift, and a person approved the
// version the request named) or arguments are not what approval was
// requested for: approval_drift, which leaves the run resumable.
func (r Run) checkApproval(id string, req record.ApprovalRequested) error {
	if reg := r.Skills; req.Skill != "" && reg != nil {
		// A request recorded before the tree digest was has only the
		// SKILL.md digest to compare.
		if s, ok := reg.Lookup(req.Skill); !ok || string(s.Digest) != req.SkillDigest || req.SkillTreeDigest != "" && string(s.TreeDigest) != req.SkillTreeDigest {
			return outcome.Policy("approval_drift", "call %s runs skill %s, which is not the version it was when approval was requested (digest %s); nothing was run", id, req.Skill, req.SkillDigest)
		}
	}
	for _, c := range loop.PendingCalls(r.Resumed.Messages) {
		if c.ID == id && c.Arguments != req.Arguments {
			return outcome.Policy("approval_drift", "call %s's arguments are not the ones approval was requested for; nothing was run", id)
		}
	}
	return nil
}

// childRequest is the request for a call waiting in a delegate_task
// child, as the child's own verified journal holds it.
func (r Run) childRequest(req record.ApprovalRequested) (record.ApprovalRequested, error) {
	dir := filepath.Join(r.Dir, filepath.FromSlash(req.Child))
	id := req.CallID[strings.LastIndex(req.CallID, "/")+1:]
	m, err := record.ReadManifest(dir)
	if err != nil {
		return req, fmt.Errorf("call %s waits in child run %s, which cannot be read: %w", req.CallID, req.Child, err)
	}
	st, err := rundir.Open(dir, m, r.Key)
	if err != nil {
		return req, err
	}
	child, ok := st.ApprovalsRequested[id]
	if !ok {
		return req, outcome.Policy("approval_unknown", "call %s is not waiting in child run %s: its journal holds no request for %s; nothing was decided", req.CallID, req.Child, id)
	}
	return child, nil
}
