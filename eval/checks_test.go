package eval

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/testenv"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/scripts"
	"github.com/harness-dev/harness/tools"
)

// TestMain lets the test binary act as the sandbox helper (the execute
// layer run_command starts), as the harness binary does.
func TestMain(m *testing.M) {
	if code, ok := scripts.HelperDispatch(os.Args); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// checkOf loads one check as an eval file states it (so its regexp and
// schema are read as Load reads them), with schema files beside it.
func checkOf(t *testing.T, check string, files map[string]string) Check {
	t.Helper()
	s, err := loadYAML(t, "evals:\n  - id: 1\n    prompt: p\n    checks:\n      - "+check+"\n", files)
	if err != nil {
		t.Fatal(err)
	}
	return s.Evals[0].Checks[0]
}

// TestRunCheck: every kind of check, passing and failing, on a cell's
// run and workspace.
func TestRunCheck(t *testing.T) {
	ws := t.TempDir()
	testenv.WriteTree(t, ws, map[string]string{
		"out/report.json": `{"name": "demo", "count": 3}`,
		"out/notes.txt":   "risk: low\nchecked 3 packages\n",
	})
	testenv.Must(t, os.Symlink("out/notes.txt", filepath.Join(ws, "inner-link")))
	cost := 0.02
	run := record.EvalRun{Answer: `  {"verdict": "ok", "score": 7}` + "\n", Turns: 4, Tokens: 1200, CostUSD: &cost,
		ToolCalls: map[string]int{"read_file": 2}, Loaded: []string{"demo"}}
	schemas := map[string]string{
		"evals/verdict.json": `{"type": "object", "required": ["verdict"], "properties": {"verdict": {"enum": ["ok", "bad"]}}}`,
		"evals/count.json":   `{"type": "object", "required": ["count"], "properties": {"count": {"type": "integer", "maximum": 2}}}`,
		"evals/name.json":    `{"type": "object", "required": ["name"]}`,
	}
	for _, tc := range []struct {
		check, kind string
		run         *record.EvalRun // nil: run
		pass        bool
		evidence    string
	}{
		{check: `answer-equals: '{"verdict": "ok", "score": 7}'`, kind: "answer-equals", pass: true},
		{check: `answer-equals: '{"verdict": "ok"}'`, kind: "answer-equals", evidence: "the answer was"},
		{check: `answer-contains: '"ok"'`, kind: "answer-contains", pass: true},
		{check: `answer-contains: bad`, kind: "answer-contains", evidence: "the answer was"},
		{check: `answer-matches: '"score": [0-9]+'`, kind: "answer-matches", pass: true},
		{check: `answer-matches: '^"score"'`, kind: "answer-matches"},
		{check: `answer-schema: verdict.json`, kind: "answer-schema", pass: true, evidence: "matches the schema"},
		{check: `answer-schema: count.json`, kind: "answer-schema", evidence: "/: missing property"},
		{check: `answer-schema: verdict.json`, kind: "answer-schema", run: &record.EvalRun{Answer: "not json"}, evidence: "is not JSON"},
		{check: `{file: out/report.json, exists: true}`, kind: "file-exists", pass: true},
		{check: `{file: out/missing.json, exists: true}`, kind: "file-exists", evidence: "exists: false"},
		{check: `{file: out/missing.json, exists: false}`, kind: "file-exists", pass: true},
		{check: `{file: out/report.json, exists: false}`, kind: "file-exists", evidence: "exists: true"},
		{check: `{file: inner-link, exists: true}`, kind: "file-exists", pass: true},
		{check: `{file: out/notes.txt, contains: "risk: low"}`, kind: "file-contains", pass: true},
		{check: `{file: out/notes.txt, contains: "risk: high"}`, kind: "file-contains", evidence: "out/notes.txt was"},
		{check: `{file: out/missing.txt, contains: "x"}`, kind: "file-contains", evidence: "cannot be read"},
		{check: `{file: inner-link, contains: "risk: low"}`, kind: "file-contains", pass: true},
		{check: `{file: out/notes.txt, matches: "(?m)^checked [0-9]+ packages$"}`, kind: "file-matches", pass: true},
		{check: `{file: out/notes.txt, matches: "^checked"}`, kind: "file-matches"},
		{check: `{file: out/report.json, schema: name.json}`, kind: "file-schema", pass: true},
		{check: `{file: out/report.json, schema: count.json}`, kind: "file-schema", evidence: "/count"},
		{check: `{file: out/notes.txt, schema: name.json}`, kind: "file-schema", evidence: "is not JSON"},
		{check: `{file: out, exists: true}`, kind: "file-exists", evidence: "not a regular file"},
		{check: `tool-called: read_file`, kind: "tool-called", pass: true, evidence: "called 2 times"},
		{check: `tool-called: write_file`, kind: "tool-called", evidence: "called 0 times"},
		{check: `tool-not-called: write_file`, kind: "tool-not-called", pass: true},
		{check: `tool-not-called: read_file`, kind: "tool-not-called", evidence: "called 2 times"},
		{check: `skill-loaded: demo`, kind: "skill-loaded", pass: true},
		{check: `skill-loaded: other`, kind: "skill-loaded", evidence: "skills loaded: demo"},
		{check: `skill-loaded: demo`, kind: "skill-loaded", run: &record.EvalRun{}, evidence: "skills loaded: none"},
		{check: `max-turns: 4`, kind: "max-turns", pass: true},
		{check: `max-turns: 3`, kind: "max-turns", evidence: "4 turns"},
		{check: `max-tokens: 1200`, kind: "max-tokens", pass: true},
		{check: `max-tokens: 1199`, kind: "max-tokens", evidence: "1200 tokens"},
		{check: `max-cost: 0.02`, kind: "max-cost", pass: true},
		{check: `max-cost: 0.019`, kind: "max-cost", evidence: "$0.020000"},
		{check: `max-cost: 100`, kind: "max-cost", run: &record.EvalRun{}, evidence: "cost is not known"},
	} {
		t.Run(tc.check, func(t *testing.T) {
			c := checkOf(t, tc.check, schemas)
			r := run
			if tc.run != nil {
				r = *tc.run
			}
			it := runCheck(context.Background(), c, cellView{run: r, workspace: ws, cellID: "c1"}, nil)
			if it.Kind != tc.kind || it.Text != c.Text() || it.Text == "" {
				t.Errorf("kind %q text %q, want kind %s", it.Kind, it.Text, tc.kind)
			}
			want := record.GradeFailed
			if tc.pass {
				want = record.GradePassed
			}
			if it.Passed != tc.pass || it.Status != want {
				t.Errorf("passed %v status %s, want %v: %s", it.Passed, it.Status, tc.pass, it.Evidence)
			}
			if !strings.Contains(it.Evidence, tc.evidence) {
				t.Errorf("evidence %q does not say %q", it.Evidence, tc.evidence)
			}
		})
	}
}

// TestFileCheckHostileWorkspace: the model wrote the workspace, so what a
// file check reads there may be a link out, a FIFO nobody writes, or a
// file too big to read; none of them leaks, hangs or passes by accident.
func TestFileCheckHostileWorkspace(t *testing.T) {
	ws := t.TempDir()
	testenv.Must(t, os.Symlink("/etc/passwd", filepath.Join(ws, "passwd")))
	testenv.Must(t, os.Symlink("../../../../../../../../etc/passwd", filepath.Join(ws, "up")))
	testenv.Must(t, os.Mkdir(filepath.Join(ws, "d"), 0o755))
	testenv.Must(t, os.Symlink("/etc", filepath.Join(ws, "d", "etc")))
	testenv.Must(t, syscall.Mkfifo(filepath.Join(ws, "fifo"), 0o644))
	big, err := os.Create(filepath.Join(ws, "big.log"))
	testenv.Must(t, err)
	testenv.Must(t, big.Truncate(maxCheckedFile+1))
	big.Close()
	for _, tc := range []struct {
		check    string
		pass     bool
		evidence string
	}{
		{check: `{file: passwd, contains: "root:"}`, evidence: "cannot be read"},
		{check: `{file: passwd, matches: "root"}`, evidence: "cannot be read"},
		{check: `{file: up, contains: "root:"}`, evidence: "cannot be read"},
		{check: `{file: d/etc/passwd, contains: "root:"}`, evidence: "cannot be read"},
		{check: `{file: passwd, exists: true}`, evidence: "cannot be read"},
		// A link out is not a file of the workspace: neither "exists"
		// nor "does not exist" holds.
		{check: `{file: passwd, exists: false}`, evidence: "cannot be read"},
		{check: `{file: fifo, contains: "x"}`, evidence: "not a regular file"},
		{check: `{file: fifo, exists: true}`, evidence: "not a regular file"},
		{check: `{file: big.log, contains: "x"}`, evidence: "over the 16 MiB"},
		// Existence does not need the file read.
		{check: `{file: big.log, exists: true}`, pass: true},
		{check: `{file: big.log, exists: false}`, evidence: "exists: true"},
	} {
		t.Run(tc.check, func(t *testing.T) {
			c := checkOf(t, tc.check, nil)
			done := make(chan record.GradedItem, 1)
			go func() { done <- runCheck(context.Background(), c, cellView{workspace: ws, cellID: "c1"}, nil) }()
			var it record.GradedItem
			select {
			case it = <-done:
			case <-time.After(5 * time.Second):
				// Unblock the open that waits for a writer, so the test
				// binary can end.
				if f, err := os.OpenFile(filepath.Join(ws, "fifo"), os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					f.Close()
				}
				t.Fatalf("the check still runs after 5s (blocked on open?)")
			}
			if it.Passed != tc.pass {
				t.Errorf("passed %v, want %v: %s", it.Passed, tc.pass, it.Evidence)
			}
			if strings.Contains(it.Evidence, "root:") {
				t.Errorf("evidence quotes /etc/passwd: %s", it.Evidence)
			}
			if !strings.Contains(it.Evidence, tc.evidence) {
				t.Errorf("evidence %q does not say %q", it.Evidence, tc.evidence)
			}
		})
	}
}

// TestCommandCheck runs command checks through run_command in a real
// bwrap sandbox: what the patterns allow runs and its exit decides;
// nothing else runs at all.
func TestCommandCheck(t *testing.T) {
	self, err := os.Executable()
	testenv.Must(t, err)
	_, err = scripts.Probe(context.Background(), scripts.BackendBwrap, scripts.Helper(self))
	testenv.Need(t, "bwrap", err)
	var patterns []tools.CommandPattern
	for _, p := range []string{"true", "false"} {
		cp, err := tools.ParseCommandPattern(p)
		testenv.Must(t, err)
		patterns = append(patterns, cp)
	}
	for _, tc := range []struct {
		name     string
		argv     string
		patterns []tools.CommandPattern
		pass     bool
		evidence string
	}{
		{name: "true passes", argv: `["true"]`, patterns: patterns, pass: true, evidence: "exit 0"},
		{name: "false fails", argv: `["false"]`, patterns: patterns, evidence: "exit 1"},
		{name: "outside the patterns", argv: "[touch, ran]", patterns: patterns, evidence: "refused"},
		{name: "no patterns", argv: "[touch, ran]", evidence: "nothing was run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			c := checkOf(t, "command: "+tc.argv, nil)
			var env *CommandEnv
			if tc.patterns != nil {
				env = &CommandEnv{Patterns: tc.patterns, Sandbox: string(scripts.BackendBwrap), RecordDir: filepath.Join(t.TempDir(), "record")}
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			it := runCheck(ctx, c, cellView{workspace: ws, cellID: "c1"}, env)
			if it.Kind != "command" || it.Passed != tc.pass {
				t.Errorf("kind %s passed %v, want %v: %s", it.Kind, it.Passed, tc.pass, it.Evidence)
			}
			if !strings.Contains(it.Evidence, tc.evidence) {
				t.Errorf("evidence %q does not say %q", it.Evidence, tc.evidence)
			}
			if _, err := os.Lstat(filepath.Join(ws, "ran")); err == nil {
				t.Errorf("the command ran")
			}
			if env == nil {
				return
			}
			// The check's call is recorded as a run's is.
			raw, err := os.ReadFile(filepath.Join(env.RecordDir, record.FileCommandExecutions))
			testenv.Must(t, err)
			var rec record.CommandExecutions
			testenv.Must(t, json.Unmarshal(raw, &rec))
			if len(rec.Executions) != 1 {
				t.Fatalf("%d executions recorded", len(rec.Executions))
			}
			x := rec.Executions[0]
			if tc.pass || strings.Contains(tc.evidence, "exit") {
				if x.Status != "executed" || x.SandboxBackend != string(scripts.BackendBwrap) {
					t.Errorf("recorded %s in %q, want executed in bwrap", x.Status, x.SandboxBackend)
				}
			} else if x.Status == "executed" {
				t.Errorf("recorded as executed")
			}
		})
	}
}
