package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/testenv"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/scripts"
)

// runPipelineExample replays examples/pipeline from its cassettes in a copy
// of the example (its build phase writes into the workspace), with extra
// arguments, and returns the pipeline directory and the copy's workspace.
func runPipelineExample(t *testing.T, extra ...string) (dir, ws string) {
	t.Helper()
	ex := t.TempDir()
	if err := os.CopyFS(ex, os.DirFS("../../examples/pipeline")); err != nil {
		t.Fatal(err)
	}
	// A csv/ left by running the example in the source tree is not part
	// of the example: every run starts without it.
	if err := os.RemoveAll(filepath.Join(ex, "workspace", "csv")); err != nil {
		t.Fatal(err)
	}
	dirs := t.TempDir()
	args := append([]string{"harness", "pipeline", "run", filepath.Join(ex, "pipeline.yaml"),
		"--replay", filepath.Join(ex, "cassettes"), "--artifacts-dir", dirs, "--id", "example"}, extra...)
	var stdout, stderr bytes.Buffer
	if code := Main(args, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("example pipeline exited %d:\n%s\n%s\nThe cassettes are stale if a request changed: run examples/pipeline/record.sh", code, stdout.String(), stderr.String())
	}
	return filepath.Join(dirs, "example"), filepath.Join(ex, "workspace")
}

// TestPipelineExampleReplays runs examples/pipeline offline, with phases
// side by side, as the README shows, under each sandbox the machine has:
// what the model is sent names no backend, so one recording replays under
// both. It fails when a change to what harness sends makes the recordings
// stale.
func TestPipelineExampleReplays(t *testing.T) {
	for _, sandbox := range []string{"bwrap", "landlock"} {
		t.Run(sandbox, func(t *testing.T) {
			exe, _ := os.Executable()
			_, err := scripts.Probe(context.Background(), scripts.Backend(sandbox), exe)
			testenv.Need(t, sandbox, err)
			dir, ws := runPipelineExample(t, "--jobs", "2", "--sandbox", sandbox)
			critic, err := os.ReadFile(filepath.Join(dir, "answers", "critic.md"))
			if err != nil || !strings.Contains(string(critic), "RFC 4180") {
				t.Errorf("critic's answer = %q, %v", critic, err)
			}
			// The build phase ran its tests twice in the sandbox: they
			// failed, the model fixed the script, they passed.
			b, err := os.ReadFile(filepath.Join(dir, "phases", "build", "command-executions.json"))
			if err != nil {
				t.Fatal(err)
			}
			var recs record.CommandExecutions
			if err := json.Unmarshal(b, &recs); err != nil {
				t.Fatal(err)
			}
			var codes []int
			for _, e := range recs.Executions {
				if e.ExitCode == nil || e.SandboxBackend != sandbox || strings.Join(e.Argv, " ") != "bash csv/export_test.sh" {
					t.Errorf("execution %+v, want bash csv/export_test.sh run under %s", e, sandbox)
					continue
				}
				codes = append(codes, *e.ExitCode)
			}
			if len(codes) != 2 || codes[0] != 1 || codes[1] != 0 {
				t.Errorf("exit codes of the build's test runs = %v, want [1 0]", codes)
			}
			script, err := os.ReadFile(filepath.Join(ws, "csv", "export.sh"))
			if err != nil || !strings.Contains(string(script), "RFC 4180") {
				t.Errorf("the build's csv/export.sh = %q, %v; want the fixed version", script, err)
			}
		})
	}
}
