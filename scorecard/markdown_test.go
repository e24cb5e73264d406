package scorecard

import (
	"regexp"
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/mdtext/mdtexttest"

	"github.com/harness-dev/harness/record"
)

func TestMarkdown(t *testing.T) {
	f := benchFixture()
	evil := "m1 | <b>x</b>\n# `y`"
	for i := range f.m.Cells {
		f.m.Cells[i].Model = evil
		if f.m.Cells[i].EvalID == "1" {
			f.m.Cells[i].EvalName = "Fill | the <tax>\nform"
		}
	}
	f.m.Models = []string{evil}
	for i := range f.gradings {
		f.gradings[i].Cell = f.m.Cells[i]
	}
	f.trigger(evil, 1, true, ptr(true))
	f.trigger(evil, 2, false, ptr(true))
	res := Summarize(f.m, f.gradings)
	res.Skill = "pdf <b>|</b>"
	ApplyGate(&res, GateOptions{MinPassRate: ptr(0.9), MinDelta: ptr(0.1)}, nil)
	md := Markdown(f.m, res)
	html := mdtexttest.RenderGFM(t, md)

	for _, want := range []string{
		"| with\\_skill | 4 | 0.79 ± 0.25 [0.39, 1.00] | 28.0 ± 19.8 | 2525 ± 1652 | — | 0 | 0 |",
		"| without\\_skill | 4 | 0.33 ± 0.24 [0.00, 0.71] |",
		"with\\_skill − without\\_skill: pass rate +0.46, seconds +7.4, tokens +912.",
		"Missed (--min-pass-rate 0.9, --min-delta 0.1):",
		"| 1\\: Fill \\| the \\<tax\\> form | m1 \\| \\<b\\>x\\<\\/b\\> \\# \\`y\\` | with\\_skill | 2 | 0.75 ± 0.35 [0.00, 1.00] | 0 | 0 |",
		"| 2 | m1 \\| \\<b\\>x\\<\\/b\\> \\# \\`y\\` | without\\_skill | 2 | 0.17 ± 0.24 [0.00, 1.00] | 0 | 0 |",
		"| 1\\: Fill \\| the \\<tax\\> form | Output is a \\<b\\>PDF\\<\\/b\\> \\| \\`file\\` | passed |",
		"| 2 | 0.50 | 1.00 | 0.50 | 1 | 1 | 0 | 0 |",
		"10 cells: 10 graded.",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("benchmark.md lacks %q:\n%s", want, md)
		}
	}
	for _, bad := range []string{"<b>", "<code", "raw HTML", "<h1"} {
		if strings.Contains(html, bad) {
			t.Errorf("rendered benchmark.md has %s:\n%s", bad, html)
		}
	}
	// Every row of every table has as many cells as its header.
	for _, table := range regexp.MustCompile(`(?s)<table>.*?</table>`).FindAllString(html, -1) {
		head := len(regexp.MustCompile(`<th[ >]`).FindAllString(table, -1))
		for _, row := range regexp.MustCompile(`(?s)<tbody>.*?</tbody>`).FindAllString(table, -1) {
			for _, tr := range strings.Split(row, "</tr>") {
				if n := strings.Count(tr, "<td"); n != 0 && n != head {
					t.Errorf("a row has %d cells, its header %d:\n%s", n, head, tr)
				}
			}
		}
	}
}

func TestMarkdownSmallSamples(t *testing.T) {
	cases := []struct {
		name string
		st   record.Stat
		want string
	}{
		{"no cell", record.Stat{}, "—"},
		{"one cell", record.Stat{N: 1, Mean: 0.5, Low95: 0.5, High95: 0.5}, "0.50 (one cell, no interval)"},
		{"two cells", record.Stat{N: 2, Mean: 0.5, Stddev: 0.71, Low95: 0, High95: 1}, "0.50 ± 0.71 [0.00, 1.00]"},
	}
	for _, tc := range cases {
		if got := withInterval(tc.st); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
