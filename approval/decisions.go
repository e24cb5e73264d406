package approval

import (
	"os"
	"os/user"
	"slices"
	"strings"

	"github.com/harness-dev/harness/internal/termsafe"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/rundir"
)

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

// Decisions are a resume's --approve, --deny, --reason and --actor, and
// the decisions a parent run handed down about this child's calls.
type Decisions struct {
	Approve, Deny []string
	Reason, Actor string
	Inherited     []record.ApprovalDecided
}

// Any says whether there is a decision to journal.
func (d Decisions) Any() bool { return len(d.Approve)+len(d.Deny)+len(d.Inherited) > 0 }

// StillWaiting keeps of a parent's decisions those about calls that wait
// here: the others were handed down by an earlier resume, and this run's
// journal holds them.
func StillWaiting(st *rundir.State, inherited []record.ApprovalDecided) []record.ApprovalDecided {
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

// Check refuses, before anything is written, a set of decisions
// that is not one decision for each of some waiting calls: a call named
// twice (approved twice, or approved and denied), an empty id, or a call
// that is not waiting. All of them are checked first, so a refused set
// journals none of its decisions.
func Check(st *rundir.State, d Decisions, runID string) error {
	waiting := st.Waiting()
	seen := map[string]string{}
	for i, id := range append(slices.Clone(d.Approve), d.Deny...) {
		flag := "--approve"
		if i >= len(d.Approve) {
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
	for _, id := range append(slices.Clone(d.Approve), d.Deny...) {
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
