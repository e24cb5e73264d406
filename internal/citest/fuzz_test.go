// Package citest holds the tests of the scripts CI runs (.ci/).
package citest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// repoRoot is the module's root, two directories up.
func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// TestFuzzScriptReportsAFinding runs .ci/fuzz on a module of its own with
// two targets: one the mutator breaks within a moment (a finding: the
// input printed, kept as a seed, the command to reproduce it, exit 1)
// and one it never breaks (no finding).
func TestFuzzScriptReportsAFinding(t *testing.T) {
	files := map[string]string{
		"p/p.go": "package p\n\n// Check fails on any input that starts with 'x'.\nfunc Check(b []byte) bool { return len(b) == 0 || b[0] != 'x' }\n",
		"p/p_test.go": `package p

import "testing"

func FuzzBreaks(f *testing.F) {
	f.Add([]byte("a"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if !Check(b) {
			t.Fatalf("input %q starts with x", b)
		}
	})
}

func FuzzHolds(f *testing.F) {
	f.Add([]byte("a"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = len(b)
	})
}
`,
	}
	dir, text, code := runFuzzScript(t, files, nil)
	if code != 1 {
		t.Fatalf("exit %d, want 1 (a finding); output:\n%s", code, text)
	}
	wantAll(t, text,
		"FOUND an input that fails example.com/fuzzed/p FuzzBreaks",
		"fuzz: the input reproduces:",
		"fuzz: reproduce with: go test -count=1 -run '^FuzzBreaks/",
		"2 targets, 1 found an input that reproduces")
	// The target that holds is never a finding. Go's fuzzing engine can
	// fail it once at its own deadline (golang/go#75804), which the
	// script says and fuzzes again: that is all it may say of it.
	if strings.Contains(text, "FOUND an input that fails example.com/fuzzed/p FuzzHolds") ||
		strings.Contains(text, "FuzzHolds FAILED") && !strings.Contains(text, "FuzzHolds passed when fuzzed again: the failure above was the engine's") {
		t.Errorf("the target that holds was reported:\n%s", text)
	}
	kept, _ := filepath.Glob(filepath.Join(dir, "p", "testdata", "fuzz", "FuzzBreaks", "*"))
	if len(kept) == 0 {
		t.Errorf("the failing input was not kept in testdata/fuzz as a seed")
	}
}

// runFuzzScript runs .ci/fuzz with FUZZTIME=2s and env on a module of its
// own holding files: the module's directory, the output and exit code.
func runFuzzScript(t *testing.T, files map[string]string, env []string) (string, string, int) {
	t.Helper()
	if testing.Short() {
		t.Skip("fuzzes for a few seconds")
	}
	dir := t.TempDir()
	script, err := os.ReadFile(filepath.Join(repoRoot(t), ".ci", "fuzz"))
	if err != nil {
		t.Fatal(err)
	}
	files[".ci/fuzz"] = string(script)
	files["go.mod"] = "module example.com/fuzzed\n\ngo 1.24\n"
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("bash", filepath.Join(dir, ".ci", "fuzz"))
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "FUZZTIME=2s", "GOFLAGS=-mod=mod"), env...)
	out, _ := cmd.CombinedOutput()
	return dir, string(out), cmd.ProcessState.ExitCode()
}

func wantAll(t *testing.T, text string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(text, want) {
			t.Errorf("the output lacks %q; it is:\n%s", want, text)
		}
	}
}

// TestFuzzScriptTellsTheEngineFromAFinding: a target that fails with no
// input written is the fuzzing engine's failure, not a finding. Fuzzed
// again, one that passes is said to have been the engine's; one that
// fails again is a warning. Neither turns CI red.
func TestFuzzScriptTellsTheEngineFromAFinding(t *testing.T) {
	// Each target fails before it fuzzes (outside f.Fuzz, where no input
	// is involved), as an engine that dies at its start does: the first
	// only on its first attempt (it leaves a mark), the second always.
	_, text, code := runFuzzScript(t, map[string]string{
		"p/p_test.go": `package p

import (
	"os"
	"path/filepath"
	"testing"
)

func FuzzEngineOnce(f *testing.F) {
	mark := filepath.Join(os.Getenv("FUZZ_MARKS"), "once")
	if _, err := os.Stat(mark); err != nil {
		os.WriteFile(mark, nil, 0o644)
		f.Fatal("the engine died")
	}
	f.Fuzz(func(t *testing.T, b []byte) {})
}

func FuzzEngineAlways(f *testing.F) {
	f.Fatal("the engine died")
	f.Fuzz(func(t *testing.T, b []byte) {})
}
`,
	}, []string{"FUZZ_MARKS=" + t.TempDir()})
	if code != 0 {
		t.Fatalf("exit %d, want 0 (no finding); output:\n%s", code, text)
	}
	wantAll(t, text,
		"fuzz: no failing input was written: the fuzzing engine failed, not the code",
		"fuzz: example.com/fuzzed/p FuzzEngineOnce passed when fuzzed again: the failure above was the engine's",
		"fuzz: WARNING: the engine failed twice on example.com/fuzzed/p FuzzEngineAlways; reported, not a finding",
		"2 targets, 0 found an input that reproduces, 1 engine failures after a retry")
	if strings.Contains(text, "FOUND") {
		t.Errorf("an engine failure was reported as a finding:\n%s", text)
	}
}
