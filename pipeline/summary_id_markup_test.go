package pipeline

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"

	"github.com/harness-dev/harness/record"
)

// TestSummaryHeadingIDAsText: the summary's heading writes the batch's id
// as it is. An id passes CheckRunID (letters, digits, '.', '_', '-'), and
// such an id can still be markup to GFM: www.attacker.example is an
// autolink, a_b_c and __x__ emphasis. --id is often made in CI from a branch
// or pull request name, which whoever opened it chose.
func TestSummaryHeadingIDAsText(t *testing.T) {
	for _, id := range []string{"www.attacker.example", "__bold__", "_em_"} {
		dir := t.TempDir()
		res := &record.PipelineResult{Dir: dir, BatchID: id, Status: "succeeded"}
		out := filepath.Join(dir, "summary.md")
		if err := WriteSummary(out, res); err != nil {
			t.Fatal(err)
		}
		md, _ := os.ReadFile(out)
		var html bytes.Buffer
		if err := goldmark.New(goldmark.WithExtensions(extension.GFM)).Convert(md, &html); err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{"<a ", "<em", "<strong"} {
			if strings.Contains(html.String(), bad) {
				t.Errorf("id %q renders %s:\n%s", id, bad, html.String())
			}
		}
	}
}
