package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harness-dev/harness/loop/looptest"
	"github.com/harness-dev/harness/outcome"
)

// TestSIGTERMStopsRun sends SIGTERM to a real harness process while its
// model request is in flight: the run must stop at a safe point, record
// itself as interrupted and exit 130. (testscript's kill sends only INT.)
func TestSIGTERMStopsRun(t *testing.T) {
	srv := looptest.New([]looptest.Reply{{Hang: true}})
	defer srv.Close()
	dir := t.TempDir()
	// testscript.Main runs the harness command when the test binary is
	// invoked under that name.
	bin := filepath.Join(dir, "harness")
	if err := os.Symlink(os.Args[0], bin); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "--workspace", ws, "--model", "m", "--base-url", srv.URL,
		"--prompt", "hi", "--run-id", "term", "--artifacts-dir", filepath.Join(dir, "runs"))
	cmd.Env = append(os.Environ(), "HARNESS_API_KEY=sk-test")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait for the request to arrive; the deadline only turns a hang into
	// a failure.
	deadline := time.Now().Add(time.Minute)
	for len(srv.Requests()) == 0 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no model request after a minute; stderr:\n%s", stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != outcome.ExitInterrupted {
		t.Fatalf("exit = %v, want %d; stderr:\n%s", err, outcome.ExitInterrupted, stderr.String())
	}
	manifest, err := os.ReadFile(filepath.Join(dir, "runs", "term", "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"status": "interrupted"`, `"exitCode": 130`, `"resumable": true`} {
		if !strings.Contains(string(manifest), want) {
			t.Errorf("run.json lacks %s", want)
		}
	}
}
