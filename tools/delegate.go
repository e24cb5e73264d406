package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/record"
)

// DelegateToolName is the subagent tool's name.
const DelegateToolName = "delegate_task"

// ChildRunner runs a child run for delegate_task. run implements it; the
// tool only knows that a child ends with a result.
type ChildRunner interface {
	// RunChild runs the child named id with profile p on task, or, when a
	// child of that id already exists (the parent was resumed), finishes
	// it from its own journal. The error is for faults that prevent any
	// result, or a *loop.AwaitingError when the child stopped at a call a
	// person must decide: the parent then stops too, with this call
	// unfinished.
	RunChild(ctx context.Context, p Profile, task, id string) (record.ChildResult, error)
}

// Delegate is delegate_task: a bounded task for a child run that starts
// from a fresh context with exactly its profile's skills and tools.
type Delegate struct {
	Profiles []Profile
	Runner   ChildRunner
}

func (t *Delegate) Effect() loop.Effect { return loop.EffectSideEffect }

func (t *Delegate) Spec() loop.ToolSpec {
	var names []string
	var b strings.Builder
	for _, p := range t.Profiles {
		names = append(names, p.Name)
		fmt.Fprintf(&b, "- %s: %s\n", p.Name, p.Description)
	}
	enum, _ := json.Marshal(names)
	return loop.ToolSpec{
		Name: DelegateToolName,
		Description: "Hand a bounded task to a subagent that starts from a fresh context with only its profile's skills and tools; you receive its summary. Profiles:\n" +
			b.String(),
		Parameters: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["profile","task"],"properties":{` +
			`"profile":{"type":"string","enum":` + string(enum) + `},` +
			`"task":{"type":"string","description":"the whole task: the subagent sees nothing else"}}}`),
	}
}

func (t *Delegate) Call(ctx context.Context, call loop.ToolCall, raw json.RawMessage) (loop.ToolResult, error) {
	var args struct {
		Profile string `json:"profile"`
		Task    string `json:"task"`
	}
	if err := json.Unmarshal(raw, &args); err != nil {
		return loop.ErrorResult("arguments_invalid", err.Error(), nil), nil
	}
	i := slices.IndexFunc(t.Profiles, func(p Profile) bool { return p.Name == args.Profile })
	if i < 0 {
		return loop.ErrorResult("profile_not_found", "profile not found: "+args.Profile, nil), nil
	}
	out, err := t.Runner.RunChild(ctx, t.Profiles[i], args.Task, loop.FileSafe(call.ID))
	if ctx.Err() != nil {
		return loop.ToolResult{}, ctx.Err()
	}
	if err != nil {
		return loop.ToolResult{}, err
	}
	b, _ := json.Marshal(out)
	status := loop.StatusOK
	if out.Status != "ok" && out.Status != "limit" {
		status = loop.StatusError
	}
	return loop.ToolResult{Content: string(b), Status: status, Record: out, Usage: out.Usage}, nil
}
