package tools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/internal/testenv"
	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/scripts"
	"github.com/harness-dev/harness/workspace"
)

func TestCommandPatterns(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		argv    []string
		match   bool
	}{
		{"go test ./...", []string{"go", "test", "./..."}, true},
		{"go test ./...", []string{"go", "test", "./...", "-run", "X"}, false},
		{"go test ./...", []string{"go", "test"}, false},
		{"go  test   ./...", []string{"go", "test", "./..."}, true},
		{"npm run *", []string{"npm", "run", "build"}, true},
		{"npm run *", []string{"npm", "run"}, true},
		{"npm run *", []string{"npm", "install"}, false},
		{"npm run *", []string{"npm"}, false},
		// Words are compared as they are: no shell, no globbing.
		{"cat *", []string{"cat", "a; rm -rf /"}, true},
		{"ls -1", []string{"ls", "-1;", "rm"}, false},
		{"ls", []string{"ls "}, false},
	} {
		p, err := ParseCommandPattern(tc.pattern)
		if err != nil {
			t.Fatalf("%q: %v", tc.pattern, err)
		}
		if got := p.Matches(tc.argv); got != tc.match {
			t.Errorf("%q matches %q: %v, want %v", tc.pattern, tc.argv, got, tc.match)
		}
	}
	for _, bad := range []string{"", "  ", "*", "go * test"} {
		if _, err := ParseCommandPattern(bad); err == nil {
			t.Errorf("pattern %q was accepted", bad)
		}
	}
}

// FuzzCommandPattern: a pattern that parses matches exactly the argvs
// that start with its words (a prefix pattern) or equal them.
func FuzzCommandPattern(f *testing.F) {
	f.Add("go test *", "go test ./x")
	f.Add("ls -1", "ls -1")
	f.Fuzz(func(t *testing.T, pattern, argvText string) {
		p, err := ParseCommandPattern(pattern)
		if err != nil {
			return
		}
		argv := strings.Fields(argvText)
		words := strings.Fields(pattern)
		want := slices.Equal(argv, words)
		if words[len(words)-1] == "*" {
			want = len(argv) >= len(words)-1 && slices.Equal(argv[:len(words)-1], words[:len(words)-1])
		}
		if p.Matches(argv) != want {
			t.Fatalf("%q on %q: %v", pattern, argv, !want)
		}
	})
}

// BenchmarkCommandTrue is run_command's start of `true` in the sandbox,
// the whole call (match, grant, sandbox, record); BenchmarkBwrapBare in
// scripts is bare bwrap for comparison.
func BenchmarkCommandTrue(b *testing.B) {
	self, _ := os.Executable()
	backend, err := scripts.Probe(context.Background(), scripts.BackendAuto, scripts.Helper(self))
	testenv.Need(b, "a sandbox backend", err)
	dir := b.TempDir()
	ws, err := workspace.Open(dir, workspace.DefaultSandbox, ".", nil)
	if err != nil {
		b.Fatal(err)
	}
	p, _ := ParseCommandPattern("true")
	runDir := filepath.Join(b.TempDir(), "run")
	os.MkdirAll(runDir, 0o755)
	tool := NewCommandTool(Commands{Workspace: ws, Patterns: []CommandPattern{p}, Backend: backend, Helper: scripts.Helper(self),
		RunID: "bench", Now: time.Now, RunDir: runDir, Redact: artifacts.NewRedactor("")})
	args := json.RawMessage(`{"argv":["true"]}`)
	for b.Loop() {
		res, err := tool.Call(context.Background(), loop.ToolCall{ID: "c"}, args)
		if err != nil || res.Status != loop.StatusOK {
			b.Fatalf("%v %s", err, res.Content)
		}
	}
}
