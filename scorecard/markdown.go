package scorecard

import (
	"fmt"
	"slices"
	"strings"

	"github.com/harness-dev/harness/internal/mdtext"
	"github.com/harness-dev/harness/record"
)

// Markdown is benchmark.md: an eval's numbers for a CI job summary. Every
// text a skill, a model or an eval file wrote (names, expectations,
// models, messages) goes through mdtext.Inline: a table cell stays one cell and
// nothing in it becomes markup.
func Markdown(m record.EvalManifest, res record.EvalResult) []byte {
	var b strings.Builder
	status := res.Status
	if status == "" {
		status = "not gated"
	}
	fmt.Fprintf(&b, "## harness eval %s: %s\n\n", mdtext.Inline(res.Skill, 100), mdtext.Inline(status, 40))
	b.WriteString(cellsLine(res.Cells) + "\n\n")
	b.WriteString("Pass rate is the share of a cell's expectations and checks that passed (ungraded ones count as not passed), as mean ± sample standard deviation over the cells, with a 95% interval of the mean (Student's t); n is the number of graded cells.\n\n")

	for _, mod := range summaryModels(res.Summaries) {
		fmt.Fprintf(&b, "### %s\n\n", mdtext.Inline(mod, 100))
		b.WriteString("| configuration | n | pass rate | seconds | tokens | cost (USD) | ungraded | runs failed |\n")
		b.WriteString("| --- | ---: | --- | --- | --- | --- | ---: | ---: |\n")
		for _, s := range res.Summaries {
			if s.Model != mod {
				continue
			}
			cost := "—"
			if s.CostUSD != nil {
				cost = spread(*s.CostUSD, "%.4f")
			}
			fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %d | %d |\n", mdtext.Inline(s.Configuration, 40), s.PassRate.N,
				withInterval(s.PassRate), spread(s.Seconds, "%.1f"), spread(s.Tokens, "%.0f"), cost, s.Ungraded, s.RunFailed)
		}
		b.WriteString("\n")
		for _, d := range res.Deltas {
			if d.Model == mod {
				fmt.Fprintf(&b, "%s − %s: pass rate %+.2f, seconds %+.1f, tokens %+.0f.\n\n", mdtext.Inline(d.Of, 40), mdtext.Inline(d.Minus, 40), d.PassRate, d.Seconds, d.Tokens)
			}
		}
	}

	if g := res.Gate; g != nil {
		b.WriteString("### Gate\n\n")
		var asked []string
		if g.MinPassRate != nil {
			asked = append(asked, "--min-pass-rate "+num(*g.MinPassRate))
		}
		if g.MinDelta != nil {
			asked = append(asked, "--min-delta "+num(*g.MinDelta))
		}
		if g.NoRegressionFrom != "" {
			asked = append(asked, "--no-regression-from "+mdtext.Inline(g.NoRegressionFrom, 200))
		}
		switch {
		case len(asked) == 0:
			b.WriteString("Nothing asked.\n\n")
		case g.Met:
			fmt.Fprintf(&b, "Met: %s.\n\n", strings.Join(asked, ", "))
		default:
			fmt.Fprintf(&b, "Missed (%s):\n\n", strings.Join(asked, ", "))
			for _, line := range g.Missed {
				fmt.Fprintf(&b, "- %s\n", mdtext.Inline(line, 400))
			}
			b.WriteString("\n")
		}
	}

	if len(res.PerEval) > 0 {
		b.WriteString("### Per eval\n\n| eval | model | configuration | n | pass rate | ungraded | runs failed |\n| --- | --- | --- | ---: | --- | ---: | ---: |\n")
		for _, s := range res.PerEval {
			fmt.Fprintf(&b, "| %s | %s | %s | %d | %s | %d | %d |\n", mdtext.Inline(evalLabel(m, s.EvalID), 120), mdtext.Inline(s.Model, 60), mdtext.Inline(s.Configuration, 40),
				s.PassRate.N, withInterval(s.PassRate), s.Ungraded, s.RunFailed)
		}
		b.WriteString("\n")
	}

	if len(res.NonDiscriminating) > 0 {
		b.WriteString("### Expectations that do not tell the configurations apart\n\nEach had the same outcome in every graded cell of every configuration: it says nothing of the skill.\n\n| eval | expectation | always |\n| --- | --- | --- |\n")
		for _, nd := range res.NonDiscriminating {
			fmt.Fprintf(&b, "| %s | %s | %s |\n", mdtext.Inline(evalLabel(m, nd.EvalID), 120), mdtext.Inline(nd.Text, 300), mdtext.Inline(nd.Always, 20))
		}
		b.WriteString("\n")
	}

	if len(res.Triggers) > 0 {
		b.WriteString("### Triggers\n\nA ratio with nothing to count is 1 (precision when the skill was never reached for, recall when no query should have reached it); a query not decided counts as wrong.\n\n| model | n | precision | recall | accuracy | true positives | false positives | true negatives | false negatives |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
		for _, t := range res.Triggers {
			fmt.Fprintf(&b, "| %s | %d | %.2f | %.2f | %.2f | %d | %d | %d | %d |\n", mdtext.Inline(t.Model, 100), t.N, t.Precision, t.Recall, t.Accuracy,
				t.TruePositives, t.FalsePositives, t.TrueNegatives, t.FalseNegatives)
		}
		b.WriteString("\n")
	}
	if res.Message != "" {
		b.WriteString(mdtext.Inline(res.Message, 1000) + "\n")
	}
	return []byte(b.String())
}

// cellsLine counts cells by state, in a fixed order, then any other.
func cellsLine(counts map[string]int) string {
	total := counts[CellGraded] + counts[CellNotRun]
	parts := []string{}
	for _, k := range []string{CellGraded, CellNotRun, CellRunFailed, CellUnknown} {
		if n := counts[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, strings.ReplaceAll(k, "_", " ")))
		}
	}
	var rest []string
	for k := range counts {
		if k != CellGraded && k != CellNotRun && k != CellRunFailed && k != CellUnknown && counts[k] > 0 {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	for _, k := range rest {
		parts = append(parts, fmt.Sprintf("%d %s", counts[k], mdtext.Inline(k, 40)))
	}
	if len(parts) == 0 {
		return fmt.Sprintf("%d cells.", total)
	}
	return fmt.Sprintf("%d cells: %s.", total, strings.Join(parts, ", "))
}

func summaryModels(sums []record.EvalSummary) []string {
	var out []string
	for _, s := range sums {
		if !slices.Contains(out, s.Model) {
			out = append(out, s.Model)
		}
	}
	return out
}

// withInterval is a pass rate as "mean ± stddev [low, high]"; with fewer
// than two cells there is no spread to show, and it says so.
func withInterval(s record.Stat) string {
	switch {
	case s.N == 0:
		return "—"
	case s.N == 1:
		return fmt.Sprintf("%.2f (one cell, no interval)", s.Mean)
	}
	return fmt.Sprintf("%.2f ± %.2f [%.2f, %.2f]", s.Mean, s.Stddev, s.Low95, s.High95)
}

func spread(s record.Stat, format string) string {
	if s.N == 0 {
		return "—"
	}
	return fmt.Sprintf(format+" ± "+format, s.Mean, s.Stddev)
}

// evalLabel is an eval's name (from its cells) with its id.
func evalLabel(m record.EvalManifest, id string) string {
	for _, c := range m.Cells {
		if c.EvalID == id && c.EvalName != "" && c.EvalName != id {
			return id + ": " + c.EvalName
		}
	}
	return id
}
