package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/testenv"
)

// TestForgeExampleReplays runs examples/forge offline from its cassette on
// a copy of its workspace: the scripted model's first draft fails its own
// test in the sandbox, the second is promoted. It fails when a change to
// what harness sends makes the recording stale: re-record with
// examples/forge/record.sh.
func TestForgeExampleReplays(t *testing.T) {
	_, err := exec.LookPath("bwrap")
	testenv.Need(t, "bubblewrap (drafts' tests run in the sandbox)", err)
	ex, err := filepath.Abs("../../examples/forge")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if out, err := exec.Command("cp", "-r", filepath.Join(ex, "workspace"), filepath.Join(dir, "workspace")).CombinedOutput(); err != nil {
		t.Fatalf("copy: %v %s", err, out)
	}
	ws := filepath.Join(dir, "workspace")
	var stdout, stderr bytes.Buffer
	code := Main([]string{"harness", "run", "--workspace", ws, "--skills-root", filepath.Join(ws, "skills"),
		"--model", "gpt-4.1-mini", "--prompt-file", filepath.Join(ex, "prompt.txt"), "--allow-tool", "create_skill",
		"--store", filepath.Join(dir, "store"), "--replay", filepath.Join(ex, "cassette.jsonl"),
		"--artifacts-dir", filepath.Join(dir, "runs"), "--run-id", "forge",
	}, strings.NewReader(""), &stdout, &stderr)
	if code != 0 {
		t.Fatalf("example exited %d:\n%s\nThe cassette is stale if a request changed: run examples/forge/record.sh", code, stderr.String())
	}
	script, err := os.ReadFile(filepath.Join(ws, "skills", "csv-rows", "scripts", "count.sh"))
	if err != nil || !strings.Contains(string(script), "but the header") {
		t.Errorf("the promoted skill is not the second draft: %q, %v", script, err)
	}
	forge, _ := os.ReadFile(filepath.Join(dir, "runs", "forge", "skill-forge.json"))
	for _, want := range []string{`"outcome": "tests_failed"`, `"outcome": "promoted"`, `"risk": "low"`} {
		if !strings.Contains(string(forge), want) {
			t.Errorf("skill-forge.json lacks %s", want)
		}
	}
}
