package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPipelineExampleReplays runs examples/pipeline offline from its
// cassettes, with phases side by side, as the README shows. It fails when
// a change to what harness sends makes the recordings stale: re-record
// with examples/pipeline/record.sh.
func TestPipelineExampleReplays(t *testing.T) {
	ex, err := filepath.Abs("../../examples/pipeline")
	if err != nil {
		t.Fatal(err)
	}
	dirs := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := Main([]string{"harness", "pipeline", "run", filepath.Join(ex, "pipeline.yaml"),
		"--jobs", "2", "--replay", filepath.Join(ex, "cassettes"), "--artifacts-dir", dirs, "--id", "example",
	}, strings.NewReader(""), &stdout, &stderr)
	if code != 0 {
		t.Fatalf("example pipeline exited %d:\n%s\n%s\nThe cassettes are stale if a request changed: run examples/pipeline/record.sh", code, stdout.String(), stderr.String())
	}
	critic, err := os.ReadFile(filepath.Join(dirs, "example", "answers", "critic.md"))
	if err != nil || !strings.Contains(string(critic), "RFC 4180") {
		t.Errorf("critic's answer = %q, %v", critic, err)
	}
}
