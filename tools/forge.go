package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/harness-dev/harness/forge"
	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/record"
)

// Names of the SkillForge tools.
const (
	CreateSkillName   = "create_skill"
	ComposeSkillsName = "compose_skills"
)

// ForgeTools are create_skill and compose_skills over one run's forge.
// Both are side effects: a skill the model writes may become live for
// later runs, so each needs --allow-tool and the operator's command.
func ForgeTools(f *forge.Forge, runID string, allow []string) []loop.Tool {
	var out []loop.Tool
	for _, name := range allow {
		switch name {
		case CreateSkillName:
			out = append(out, &createSkillTool{f: f, runID: runID})
		case ComposeSkillsName:
			out = append(out, &composeSkillsTool{f: f, runID: runID})
		}
	}
	return out
}

type createSkillTool struct {
	f     *forge.Forge
	runID string
}

func (t *createSkillTool) Effect() loop.Effect { return loop.EffectSideEffect }

func (t *createSkillTool) Spec() loop.ToolSpec {
	return loop.ToolSpec{
		Name: CreateSkillName,
		Description: fmt.Sprintf("Write a new skill (or a new version of one you wrote). harness validates it, scans it and runs its tests in a sandbox "+
			"against a throwaway copy of the workspace; failures come back to you to fix, for at most %d attempts per name. A skill that passes "+
			"becomes available to later runs, at once or after a person approves it, by its risk. Declare what its scripts need in permissions.",
			record.MaxSkillForgeAttempt),
		Parameters: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["name","description","body"],"properties":{` +
			`"name":{"type":"string","description":"lowercase letters, digits and hyphens"},` +
			`"description":{"type":"string","description":"what it does and when to use it"},` +
			`"body":{"type":"string","description":"the SKILL.md instructions (Markdown, without frontmatter)"},` +
			`"files":{"type":"object","additionalProperties":{"type":"string"},"description":"path inside the skill -> content, e.g. scripts/run.sh"},` +
			`"permissions":{"type":"object","description":"what its scripts may touch, and all they get when they run (its tests too): filesystem {read,write} paths relative to the workspace, env [NAMES], exec [programs besides the interpreter], network [host:port], credentials bool; {} for none"},` +
			`"tests":{"type":"array","items":{"type":"object","additionalProperties":false,"required":["script"],"properties":{` +
			`"script":{"type":"string"},"args":{"type":"array","items":{"type":"string"}},"stdin":{"type":"string"},` +
			`"expect":{"type":"object","additionalProperties":false,"properties":{"exitCode":{"type":"integer"},"stdoutContains":{"type":"string"},"stdoutRegex":{"type":"string"}}}}}}}}`),
	}
}

func (t *createSkillTool) Call(ctx context.Context, call loop.ToolCall, raw json.RawMessage) (loop.ToolResult, error) {
	var d forge.Draft
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return loop.ErrorResult("arguments_invalid", err.Error(), nil), nil
	}
	a, err := t.f.Create(ctx, forge.Call{Tool: CreateSkillName, CallID: call.ID, Turn: loop.TurnOf(ctx), RunID: t.runID}, d)
	return forgeResult(a, err)
}

type composeSkillsTool struct {
	f     *forge.Forge
	runID string
}

func (t *composeSkillsTool) Effect() loop.Effect { return loop.EffectSideEffect }

func (t *composeSkillsTool) Spec() loop.ToolSpec {
	return loop.ToolSpec{
		Name: ComposeSkillsName,
		Description: "Write a skill that orders existing skills: each step names a skill and what to do with it. " +
			"The skills must exist; a composition that leads back to itself is refused. It goes through the same checks and approval as create_skill.",
		Parameters: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["name","description","steps"],"properties":{` +
			`"name":{"type":"string"},"description":{"type":"string"},` +
			`"steps":{"type":"array","minItems":1,"items":{"type":"object","additionalProperties":false,"required":["skill","instruction"],"properties":{` +
			`"skill":{"type":"string"},"instruction":{"type":"string"}}}}}}`),
	}
}

func (t *composeSkillsTool) Call(ctx context.Context, call loop.ToolCall, raw json.RawMessage) (loop.ToolResult, error) {
	var args struct {
		Name        string       `json:"name"`
		Description string       `json:"description"`
		Steps       []forge.Step `json:"steps"`
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&args); err != nil {
		return loop.ErrorResult("arguments_invalid", err.Error(), nil), nil
	}
	a, err := t.f.Compose(ctx, forge.Call{Tool: ComposeSkillsName, CallID: call.ID, Turn: loop.TurnOf(ctx), RunID: t.runID}, args.Name, args.Description, args.Steps)
	return forgeResult(a, err)
}

// forgeResult tells the model what became of its draft and, when it
// failed, exactly what to fix.
func forgeResult(a record.ForgeAttempt, err error) (loop.ToolResult, error) {
	if err != nil {
		return loop.ErrorResult("forge_failed", fmt.Sprintf("harness could not finish with the draft: %v", err), a), nil
	}
	left := max(record.MaxSkillForgeAttempt-a.Attempt, 0)
	msg := map[string]string{
		record.ForgeRefused:     "refused; nothing was tested",
		record.ForgeInvalid:     "the draft is not a valid skill; fix the diagnostics and call again",
		record.ForgeTestsFailed: "a test failed; fix the draft and call again",
		record.ForgePromoted:    "passed and promoted: it is live for later runs",
		record.ForgePending:     "passed; it waits for a person to approve it (harness skills pending) before any run can use it",
	}[a.Outcome]
	// What the model sees of each test is what it needs to fix the
	// draft, and nothing that varies between identical runs (durations),
	// which would make a recorded run impossible to replay.
	type testView struct {
		Script   string   `json:"script"`
		Args     []string `json:"args"`
		Passed   bool     `json:"passed"`
		Failure  string   `json:"failure,omitempty"`
		ExitCode int      `json:"exitCode"`
		Stdout   string   `json:"stdout"`
		Stderr   string   `json:"stderr"`
	}
	tests := []testView{}
	for _, t := range a.Tests {
		tests = append(tests, testView{t.Script, t.Args, t.Passed, t.Failure, t.ExitCode, t.Stdout, t.Stderr})
	}
	out := map[string]any{"skill": a.Skill, "outcome": a.Outcome, "message": msg, "attempt": a.Attempt, "attemptsLeft": left,
		"diagnostics": a.Diagnostics, "risk": a.Risk, "version": a.Version, "tests": tests}
	if e := a.Eval; e != nil {
		// The numbers, not where they are kept: the eval directory names
		// the run, and a replay under another id must ask the same.
		out["eval"] = map[string]any{"minPassRate": e.MinPassRate, "passRate": e.PassRate, "n": e.N, "met": e.Met, "reason": e.Reason}
		if !e.Met && a.Outcome == record.ForgePending {
			out["message"] = "passed its tests, but " + e.Reason
		}
	}
	b, _ := json.Marshal(out)
	status := loop.StatusOK
	if a.Outcome != record.ForgePromoted && a.Outcome != record.ForgePending {
		status = loop.StatusError
	}
	return loop.ToolResult{Content: string(b), Status: status, Record: a}, nil
}
