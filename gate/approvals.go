package gate

import (
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/skills"
	"github.com/harness-dev/harness/tools"
)

// Calls that wait for a person: the operator names tools with
// --confirm-tool (globs such as KEY__*), and a skill may mark itself
// metadata.harness.destructive. Such a call is not started: the run ends
// awaiting approval (exit 6) with the call journaled (approval.requested)
// and listed in result.json; `harness resume --approve CALL_ID` runs it,
// `--deny CALL_ID` tells the model a person refused it. Both decisions are
// journaled (approval.decided) with who made them.

// Approvals is the loop's Approver.
type Approvals struct {
	confirm  []string
	registry func() *skills.Registry
	// MCPSkill, when set, names the skill whose MCP server offers an
	// exposed tool ("" for the operator's server) and whether a server
	// offers it: a skill with several servers offers KEY__TOOL with KEY
	// <skill>-<server>, which is no skill's name, or another skill's.
	MCPSkill func(exposed string) (string, bool)

	mu        sync.Mutex
	requested map[string]record.ApprovalRequested
	decided   map[string]record.ApprovalDecided
}

// NewApprovals makes the calls of tools matching confirm (--confirm-tool
// globs) and of destructive skills wait; requested and decided are what a
// resumed run's journal holds (nil for a new run).
func NewApprovals(confirm []string, registry func() *skills.Registry, requested map[string]record.ApprovalRequested, decided map[string]record.ApprovalDecided) *Approvals {
	a := &Approvals{confirm: confirm, registry: registry, requested: map[string]record.ApprovalRequested{}, decided: map[string]record.ApprovalDecided{}}
	maps.Copy(a.requested, requested)
	maps.Copy(a.decided, decided)
	return a
}

// Requested reports whether call id already waits, and Request and
// Decide record what the journal now holds.
func (a *Approvals) Requested(id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.requested[id]
	return ok
}

func (a *Approvals) Request(req record.ApprovalRequested) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.requested[req.CallID] = req
}

func (a *Approvals) Decide(d record.ApprovalDecided) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.decided[d.CallID] = d
}

// DecidedUnder are the decisions about calls whose id starts with prefix
// (a child run's CHILD_ID/), with the prefix taken off: what a parent
// hands the child it resumes.
func (a *Approvals) DecidedUnder(prefix string) []record.ApprovalDecided {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []record.ApprovalDecided
	for id, d := range a.decided {
		if rest, ok := strings.CutPrefix(id, prefix); ok && rest != "" {
			d.CallID = rest
			out = append(out, d)
		}
	}
	slices.SortFunc(out, func(x, y record.ApprovalDecided) int { return strings.Compare(x.CallID, y.CallID) })
	return out
}

// Approved reports whether a person approved call id.
func (a *Approvals) Approved(id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	d, ok := a.decided[id]
	return ok && d.Decision == record.DecisionApproved
}

func (a *Approvals) Approve(turn int, call loop.ToolCall, effect loop.Effect) (loop.Approval, *loop.ToolResult) {
	why, _ := a.Why(call)
	if why == "" {
		return loop.Proceed, nil
	}
	a.mu.Lock()
	d, ok := a.decided[call.ID]
	a.mu.Unlock()
	switch {
	case !ok:
		return loop.Wait, nil
	case d.Decision == record.DecisionApproved:
		return loop.Proceed, nil
	}
	msg := fmt.Sprintf("%s refused this call of %s when asked to approve it", d.Actor, call.Name)
	if d.Reason != "" {
		msg += ": " + d.Reason
	}
	res := loop.ErrorResult("refused_by_person", msg+"; do not try it again another way without asking", nil)
	return loop.Refuse, &res
}

// Why says what makes call wait for a person ("" if nothing), and the
// skill whose code it runs.
func (a *Approvals) Why(call loop.ToolCall) (string, *skills.Skill) {
	s := a.skillOf(call)
	for _, p := range a.confirm {
		if ok, _ := path.Match(p, call.Name); ok {
			return "--confirm-tool " + p, s
		}
	}
	if s != nil && skills.Destructive(s.Frontmatter) {
		return fmt.Sprintf("skill %s is marked destructive (metadata.harness.destructive)", s.Name), s
	}
	return "", s
}

// skillOf is the skill whose code a call runs: run_skill_script's skill
// argument, or the skill an MCP tool KEY__TOOL belongs to.
func (a *Approvals) skillOf(call loop.ToolCall) *skills.Skill {
	reg := a.registry()
	if reg == nil {
		return nil
	}
	name := ""
	switch {
	case call.Name == "run_skill_script":
		var args struct {
			Skill string `json:"skill"`
		}
		json.Unmarshal([]byte(call.Arguments), &args)
		name = args.Skill
	case strings.Contains(call.Name, tools.MCPSeparator):
		// The server that serves the tool decides; the key is only a
		// guess for a tool no running server offers (which no call runs).
		name, _, _ = strings.Cut(call.Name, tools.MCPSeparator)
		if a.MCPSkill != nil {
			if n, ok := a.MCPSkill(call.Name); ok {
				name = n
			}
		}
	}
	if s, ok := reg.Lookup(name); ok {
		return s
	}
	return nil
}
