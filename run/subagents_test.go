package run

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/internal/testenv"
	"github.com/harness-dev/harness/loop/looptest"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
)

const profilesYAML = `profiles:
  - name: writer
    description: Writes docs with the docs skill.
    skills: [docs, missing-skill]
    allowedTools: [write_file, run_skill_script]
    allowSkillScripts: [docs:scripts/stamp.sh]
    maxTurns: 5
  - name: reader
    description: Reads with the notes skill only.
    skills: [notes]
    maxTurns: 1
`

func subagentWorkspace(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	testenv.WriteTree(t, ws, map[string]string{
		"skills/docs/SKILL.md":         "---\nname: docs\ndescription: Docs. Use for docs.\n---\nWrite short docs.\n",
		"skills/docs/scripts/stamp.sh": "#!/bin/bash\necho stamped > /workspace/docs/stamp.txt\n",
		"skills/notes/SKILL.md":        "---\nname: notes\ndescription: Notes. Use for notes.\n---\nKeep notes.\n",
		"profiles.yaml":                profilesYAML,
	})
	return ws
}

func subagentOptions(ws string) func(o *Options) {
	return func(o *Options) {
		o.AllowTools = []string{"delegate_task", "write_file", "run_skill_script"}
		o.AllowSkillScripts = []string{"docs:scripts/stamp.sh"}
		o.Profiles = filepath.Join(ws, "profiles.yaml")
	}
}

func childResult(t *testing.T, content string) record.ChildResult {
	t.Helper()
	var r record.ChildResult
	if err := json.Unmarshal([]byte(content), &r); err != nil {
		t.Fatalf("result %q: %v", content, err)
	}
	return r
}

func TestDelegateToTwoProfiles(t *testing.T) {
	requireBwrap(t)
	ws := subagentWorkspace(t)
	seen, dir, _ := converse(t, ws, []looptest.Reply{
		call1("d1", "delegate_task", `{"profile":"writer","task":"Write docs/out.md saying hi."}`),
		// the writer child: a write, then its answer
		call1("cw", "write_file", `{"path":"docs/out.md","content":"hi"}`),
		call1("cs", "run_skill_script", `{"skill":"docs","path":"scripts/stamp.sh"}`),
		{Content: "Wrote docs/out.md."},
		call1("d2", "delegate_task", `{"profile":"reader","task":"Write notes.md."}`),
		// the reader child tries a tool its profile lacks, then hits its turn limit
		call1("cr", "write_file", `{"path":"notes.md","content":"x"}`),
	}, subagentOptions(ws), nil)

	w := childResult(t, seen["d1"])
	if w.Status != "ok" || w.Summary != "Wrote docs/out.md." || w.ChildRunID != "d1" || w.Usage.TotalTokens == 0 {
		t.Errorf("writer result: %+v", w)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "docs/out.md")); string(b) != "hi" {
		t.Errorf("the writer's file: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "docs/stamp.txt")); string(b) != "stamped\n" {
		t.Errorf("the writer's script did not run: %q", b)
	}
	r := childResult(t, seen["d2"])
	if r.Status != "limit" {
		t.Errorf("reader result: %+v", r)
	}
	child := filepath.Join(dir, "children")
	// The reader was never offered write_file: its call was unknown.
	out, _ := os.ReadFile(filepath.Join(child, "d2", "tool-outputs", "cr-write_file.json"))
	if !strings.Contains(string(out), "tool_unknown") {
		t.Errorf("the reader could call a tool outside its profile: %s", out)
	}
	var acts record.Activations
	if err := artifacts.ReadJSON(filepath.Join(child, "d1", record.FileActivations), "harness.skill-activations", 1, &acts); err != nil || len(acts.Activations) != 1 ||
		acts.Activations[0].Name != "docs" || acts.Activations[0].Source != record.SourceSubagent {
		t.Errorf("writer activations: %+v %v", acts, err)
	}
	var ex record.ScriptExecutions
	if err := artifacts.ReadJSON(filepath.Join(child, "d1", record.FileScriptExecutions), "harness.skill-script-executions", 1, &ex); err != nil || len(ex.Executions) != 1 || ex.Executions[0].Status != "executed" {
		t.Errorf("writer script executions: %+v %v", ex, err)
	}
	if _, err := os.Stat(filepath.Join(child, "d2", record.FileScriptExecutions)); err == nil {
		t.Error("the reader ran a script")
	}
	journal, _ := os.ReadFile(filepath.Join(child, "d1", record.FileJournal))
	if !strings.Contains(string(journal), `"type":"skill.skipped"`) {
		t.Error("the profile's missing skill was not reported")
	}
	// The parent never saw the children's skill text or raw outputs.
	if strings.Contains(seen["d1"], "Write short docs") || strings.Contains(seen["d2"], "Keep notes") {
		t.Error("child skill text reached the parent")
	}
}

func TestProfileCannotWidenParent(t *testing.T) {
	ws := subagentWorkspace(t)
	testenv.WriteTree(t, ws, map[string]string{"wide.yaml": "profiles:\n  - name: wide\n    description: x\n    allowedTools: [run_skill_script]\n"})
	o := baseOptions(ws)
	o.AllowTools, o.Profiles, o.APIKey = []string{"delegate_task"}, filepath.Join(ws, "wide.yaml"), "k"
	_, err := Run(context.Background(), o)
	var e *outcome.Error
	if !errors.As(err, &e) || e.Exit != outcome.ExitUsage || e.Code != "profile_widens_parent" {
		t.Fatalf("widening profile: %v", err)
	}
}

// TestSubagentsRecordAndReplay: one cassette serves the parent and its
// children; the replay gives the same answers offline.
func TestSubagentsRecordAndReplay(t *testing.T) {
	ws := subagentWorkspace(t)
	replies := []looptest.Reply{
		call1("d1", "delegate_task", `{"profile":"writer","task":"Say hi."}`),
		{Content: "hi from the child"},
		{Content: "parent done"},
	}
	srv := looptest.New(replies)
	cassette := filepath.Join(t.TempDir(), "c.jsonl")
	o := baseOptions(ws)
	subagentOptions(ws)(&o)
	o.Skills, o.BaseURL, o.APIKey, o.Record, o.RunID = nil, srv.URL, "k", cassette, "rec"
	res, err := Run(context.Background(), o)
	srv.Close()
	if err != nil || res.Final != "parent done" {
		t.Fatalf("record: %v %+v", err, res)
	}
	o.BaseURL, o.APIKey, o.Record, o.Replay, o.RunID = "", "", "", cassette, "rep"
	res, err = Run(context.Background(), o)
	if err != nil || res.Final != "parent done" {
		t.Fatalf("replay: %v %+v", err, res)
	}
	var m record.Manifest
	artifacts.ReadJSON(filepath.Join(res.RunDir, "children", "d1", record.FileManifest), "harness.run", 1, &m)
	if m.Final == nil || m.Final.Content != "hi from the child" {
		t.Errorf("replayed child: %+v", m.Final)
	}
}

// TestParentInterruptedWhileChildRuns: the parent stops while its child's
// model call is in flight; resuming the parent resumes the child from its
// own journal and the parent finishes.
func TestParentInterruptedWhileChildRuns(t *testing.T) {
	ws := subagentWorkspace(t)
	srv := looptest.New([]looptest.Reply{
		call1("d1", "delegate_task", `{"profile":"writer","task":"Say hi."}`),
		{Hang: true},
		{Content: "child resumed"},
		{Content: "parent done"},
	})
	defer srv.Close()
	o := baseOptions(ws)
	subagentOptions(ws)(&o)
	o.Skills, o.BaseURL, o.APIKey, o.RunID = nil, srv.URL, "k", "p"
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for len(srv.Requests()) < 2 {
			waitABit()
		}
		cancel()
	}()
	res, err := Run(ctx, o)
	var e *outcome.Error
	if !errors.As(err, &e) || e.Exit != outcome.ExitInterrupted {
		t.Fatalf("interrupted parent: %v", err)
	}
	res, err = Resume(context.Background(), ResumeOptions{RunDir: res.RunDir, APIKey: "k", Now: fixedClock, Version: "test"})
	if err != nil || res.Final != "parent done" {
		t.Fatalf("resume: %v %+v", err, res)
	}
	var m record.Manifest
	artifacts.ReadJSON(filepath.Join(res.RunDir, "children", "d1", record.FileManifest), "harness.run", 1, &m)
	if m.Status != outcome.StatusSucceeded || len(m.Segments) != 2 || m.Final.Content != "child resumed" {
		t.Errorf("child after resume: status %s, %d segments, %+v", m.Status, len(m.Segments), m.Final)
	}
}

// waitABit yields while polling a fake server in tests; the callers have
// their own end condition.
func waitABit() { time.Sleep(time.Millisecond) }

// TestProfileCannotWeakenSandbox: a profile may keep or strengthen its
// parent's sandbox, never weaken it.
func TestProfileCannotWeakenSandbox(t *testing.T) {
	for _, tc := range []struct {
		parent, child string
		ok            bool
	}{
		{"bwrap", "landlock", false},
		{"bwrap", "auto", false},
		{"bwrap", "none", false},
		{"auto", "landlock", false},
		{"landlock", "none", false},
		{"bwrap", "bwrap", true},
		{"auto", "bwrap", true},
		{"landlock", "auto", true},
		{"none", "landlock", true},
	} {
		t.Run(tc.parent+"->"+tc.child, func(t *testing.T) {
			ws := subagentWorkspace(t)
			testenv.WriteTree(t, ws, map[string]string{"p.yaml": "profiles:\n  - name: p\n    description: x\n    sandbox: " + tc.child + "\n"})
			o := baseOptions(ws)
			o.AllowTools, o.Profiles, o.Sandbox, o.Replay = []string{"delegate_task"}, filepath.Join(ws, "p.yaml"), tc.parent, filepath.Join(ws, "none.jsonl")
			testenv.WriteTree(t, ws, map[string]string{"none.jsonl": ""})
			_, err := Run(context.Background(), o)
			widened := outcome.As(err).Code == "profile_widens_parent"
			if widened == tc.ok {
				t.Errorf("parent %s, profile %s: %v", tc.parent, tc.child, err)
			}
		})
	}
}

// TestChildSpendsParentsRemainingTokens: a child gets what is left of the
// parent's --max-tokens, not a budget of the same size.
func TestChildSpendsParentsRemainingTokens(t *testing.T) {
	ws := subagentWorkspace(t)
	srv := looptest.New([]looptest.Reply{
		{ToolCalls: []looptest.Call{{ID: "d1", Name: "delegate_task", Arguments: `{"profile":"reader","task":"read"}`}}, Usage: &looptest.Usage{Prompt: 50, Completion: 10}},
		{Content: "child done"},
		{Content: "parent done"},
	})
	defer srv.Close()
	o := baseOptions(ws)
	subagentOptions(ws)(&o)
	o.Skills, o.BaseURL, o.APIKey, o.RunID, o.MaxTokens = nil, srv.URL, "k", "p", 100
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatalf("run: %v", err)
	}
	var m record.Manifest
	testenv.Must(t, artifacts.ReadJSON(filepath.Join(ws, ".harness/runs/p/children/d1", record.FileManifest), record.TypeManifest, record.Version, &m))
	if m.Inputs.Limits.MaxTokens != 40 {
		t.Errorf("the child's token limit is %d, want the parent's remainder 40", m.Inputs.Limits.MaxTokens)
	}
}

// A skill the child runs with narrows its turns and tokens
// (metadata.harness.limits), never widens them.
func TestChildTakesItsSkillsLimits(t *testing.T) {
	ws := subagentWorkspace(t)
	testenv.WriteTree(t, ws, map[string]string{
		"skills/notes/SKILL.md": "---\nname: notes\ndescription: Notes. Use for notes.\nmetadata:\n  harness:\n    limits: {max-turns: 20, max-tokens: 30}\n---\nKeep notes.\n",
		"profiles.yaml":         strings.Replace(profilesYAML, "maxTurns: 1", "maxTurns: 4", 1),
	})
	srv := looptest.New([]looptest.Reply{
		{ToolCalls: []looptest.Call{{ID: "d1", Name: "delegate_task", Arguments: `{"profile":"reader","task":"read"}`}}},
		{Content: "child done"},
		{Content: "parent done"},
	})
	defer srv.Close()
	o := baseOptions(ws)
	subagentOptions(ws)(&o)
	o.Skills, o.BaseURL, o.APIKey, o.RunID, o.MaxTokens = nil, srv.URL, "k", "p", 1000
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatalf("run: %v", err)
	}
	var m record.Manifest
	testenv.Must(t, artifacts.ReadJSON(filepath.Join(ws, ".harness/runs/p/children/d1", record.FileManifest), record.TypeManifest, record.Version, &m))
	if l := m.Inputs.Limits; l.MaxTurns != 4 || l.MaxTokens != 30 {
		t.Errorf("the child's limits are %d turns, %d tokens; want the profile's 4 turns (the skill's 20 cannot widen it) and the skill's 30 tokens", l.MaxTurns, l.MaxTokens)
	}
}
