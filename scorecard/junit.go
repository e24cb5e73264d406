package scorecard

import (
	"fmt"
	"slices"
	"strings"

	"github.com/harness-dev/harness/internal/junit"
	"github.com/harness-dev/harness/record"
)

// JUnit XML as CI systems read it: one testsuite per model, one testcase
// per eval × configuration (failed when its mean pass rate is below 1 or
// a cell's run did not succeed, the failing items with their evidence in
// the failure text; skipped when no cell of it was graded), one per
// trigger query (failed when any epoch reached for the skill against its
// label), and one for the gate.

// maxFailureText bounds one testcase's failure text: CI pages show it
// whole.
const maxFailureText = 16 << 10

// JUnit writes junit.xml for an eval's gradings and its result.
func JUnit(m record.EvalManifest, gradings []record.EvalGrading, res record.EvalResult) ([]byte, error) {
	graded := matchGradings(m, gradings, map[string]int{})
	class := "harness.eval." + xmlText(m.Skill)
	doc := junit.Suites{Name: class}
	var totalMs int64
	for _, mod := range orderedModels(m) {
		suite := junit.Suite{Name: class + "." + xmlText(mod)}
		var suiteMs int64
		add := func(c junit.Case, ms int64) {
			c.Time = secondsText(ms)
			suiteMs += ms
			suite.Tests++
			if c.Failure != nil {
				suite.Failures++
			}
			if c.Skipped != nil {
				suite.Skipped++
			}
			suite.Cases = append(suite.Cases, c)
		}
		for _, e := range orderedEvals(m) {
			for _, conf := range orderedConfigs(m) {
				if conf == record.ConfigTrigger {
					continue
				}
				if c, ms, ok := evalCase(m, graded, res, e, conf, mod, suite.Name); ok {
					add(c, ms)
				}
			}
		}
		for _, q := range triggerQueries(m, mod) {
			c, ms := triggerCase(m, graded, q, mod, suite.Name)
			add(c, ms)
		}
		if len(suite.Cases) == 0 {
			continue
		}
		suite.Time = secondsText(suiteMs)
		totalMs += suiteMs
		doc.Suites = append(doc.Suites, suite)
	}
	if g := res.Gate; g != nil {
		c := junit.Case{Name: "gate", Classname: class, Time: "0"}
		if !g.Met {
			c.Failure = &junit.Failure{Message: fmt.Sprintf("gate missed (%d conditions)", len(g.Missed)), Type: "gate", Text: xmlText(strings.Join(g.Missed, "\n"))}
		}
		suite := junit.Suite{Name: class + ".gate", Tests: 1, Time: "0", Cases: []junit.Case{c}}
		if c.Failure != nil {
			suite.Failures = 1
		}
		doc.Suites = append(doc.Suites, suite)
	}
	for _, s := range doc.Suites {
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Skipped += s.Skipped
	}
	doc.Time = secondsText(totalMs)

	b, err := junit.Encode(doc)
	if err != nil {
		return nil, fmt.Errorf("junit.xml: %w", err)
	}
	return b, nil
}

// evalCase is one eval × configuration on one model.
func evalCase(m record.EvalManifest, graded map[string]*record.EvalGrading, res record.EvalResult, evalID, config, model, class string) (junit.Case, int64, bool) {
	c := junit.Case{Name: xmlText(evalLabel(m, evalID) + " (" + config + ")"), Classname: class}
	var ms int64
	var cells, notRun int
	var text strings.Builder
	runFailed := 0
	for _, cell := range m.Cells {
		if cell.EvalID != evalID || cell.Configuration != config || cell.Model != model {
			continue
		}
		cells++
		g, ok := graded[cell.ID]
		if !ok {
			notRun++
			fmt.Fprintf(&text, "cell %s (epoch %d): not run\n", cell.ID, cell.Epoch)
			continue
		}
		ms += g.Run.DurationMs
		fmt.Fprintf(&text, "cell %s (epoch %d): pass rate %.2f (%d of %d passed, %d ungraded), run %s, exit %d\n",
			cell.ID, cell.Epoch, g.Summary.PassRate, g.Summary.Passed, g.Summary.Total, g.Summary.Ungraded, g.Run.Status, g.Run.ExitCode)
		if g.Run.Status != runSucceeded {
			runFailed++
		}
		for _, it := range g.Expectations {
			if st := it.State(); st != record.GradePassed {
				fmt.Fprintf(&text, "  [%s] %s\n    evidence: %s\n", st, it.Text, it.Evidence)
			}
		}
	}
	if cells == 0 {
		return c, 0, false
	}
	s := findSummary(res.PerEval, evalID, config, model)
	if s == nil {
		// A result without per-eval numbers: count from the gradings.
		st, _ := summarize(m, graded, evalID, config, model)
		s = &st
	}
	out := bounded(text.String())
	switch {
	case s.PassRate.N == 0:
		c.Skipped = &junit.Skipped{Message: fmt.Sprintf("no cell graded (%d not run)", notRun)}
		c.SystemOut = xmlText(out)
	case s.PassRate.Mean < 1-epsilon || runFailed > 0:
		msg := fmt.Sprintf("pass rate %s over %d graded cells", withInterval(s.PassRate), s.PassRate.N)
		if runFailed > 0 {
			msg += fmt.Sprintf("; %d runs did not succeed", runFailed)
		}
		if notRun > 0 {
			msg += fmt.Sprintf("; %d cells not run", notRun)
		}
		c.Failure = &junit.Failure{Message: xmlText(msg), Type: "eval", Text: xmlText(out)}
	default:
		c.SystemOut = xmlText(out)
	}
	return c, ms, true
}

// triggerQueries is the trigger queries of a model, in order.
func triggerQueries(m record.EvalManifest, model string) []string {
	var out []string
	for _, c := range m.Cells {
		if c.Configuration == record.ConfigTrigger && c.Model == model && !slices.Contains(out, c.EvalID) {
			out = append(out, c.EvalID)
		}
	}
	return out
}

func triggerCase(m record.EvalManifest, graded map[string]*record.EvalGrading, query, model, class string) (junit.Case, int64) {
	c := junit.Case{Name: xmlText("trigger " + evalLabel(m, query)), Classname: class}
	var ms int64
	var should *bool
	var n, right, notRun int
	var text strings.Builder
	for _, cell := range m.Cells {
		if cell.Configuration != record.ConfigTrigger || cell.EvalID != query || cell.Model != model || cell.ShouldTrigger == nil {
			continue
		}
		should = cell.ShouldTrigger
		g, ok := graded[cell.ID]
		if !ok {
			notRun++
			continue
		}
		n++
		ms += g.Run.DurationMs
		switch {
		case g.Triggered == nil:
			fmt.Fprintf(&text, "cell %s (epoch %d): not decided\n", cell.ID, cell.Epoch)
		case *g.Triggered == *cell.ShouldTrigger:
			right++
		default:
			fmt.Fprintf(&text, "cell %s (epoch %d): triggered %t\n", cell.ID, cell.Epoch, *g.Triggered)
		}
	}
	label := "should not trigger"
	if should != nil && *should {
		label = "should trigger"
	}
	switch {
	case n == 0:
		c.Skipped = &junit.Skipped{Message: fmt.Sprintf("no cell graded (%d not run)", notRun)}
	case right < n:
		c.Failure = &junit.Failure{Message: fmt.Sprintf("%s; right in %d of %d", label, right, n), Type: "trigger", Text: xmlText(text.String())}
	default:
		c.SystemOut = fmt.Sprintf("%s; right in %d of %d", label, right, n)
	}
	return c, ms
}

// bounded keeps a failure text to maxFailureText bytes, cut on a rune.
func bounded(s string) string {
	if len(s) <= maxFailureText {
		return s
	}
	cut := maxFailureText
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "\n…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// xmlText drops what XML 1.0 cannot carry (control characters other than
// tab and newlines, U+FFFE, U+FFFF); encoding/xml escapes the rest.
func xmlText(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' || r >= 0x20 && r != 0xFFFE && r != 0xFFFF && (r < 0xD800 || r > 0xDFFF) {
			return r
		}
		return -1
	}, s)
}

func secondsText(ms int64) string { return fmt.Sprintf("%.3f", float64(ms)/1000) }
