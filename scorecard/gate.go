package scorecard

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/harness-dev/harness/record"
)

// GateOptions is what the numbers must meet. A nil bound and an empty
// NoRegressionFrom ask nothing.
type GateOptions struct {
	// MinPassRate bounds with_skill's mean pass rate on every model.
	MinPassRate *float64
	// MinDelta bounds with_skill's mean minus without_skill's on every
	// model.
	MinDelta *float64
	// NoRegressionFrom names the earlier eval-result.json compared with
	// (ApplyGate's previous).
	NoRegressionFrom string
}

// Result statuses ApplyGate decides.
const (
	StatusPassed     = "passed"
	StatusFailed     = "failed"
	StatusIncomplete = "incomplete"
)

// epsilon absorbs the rounding of a mean of fractions (2/3 written as
// 0.6666666666666666), so a bound met exactly is met.
const epsilon = 1e-9

// ApplyGate checks res against g and records the outcome in res.Gate.
// Met: Status passed, exit 0; missed: Status failed, exit 1, each missed
// condition in Gate.Missed with its numbers and n. A result already
// incomplete keeps its status and exit code: the gate is recorded, but
// numbers over missing cells do not make a pass.
//
// A condition with nothing to measure is missed, never met by default:
// no graded with_skill cell on a model misses --min-pass-rate there.
//
// No regression: on every model, and on every eval per model, with_skill's
// mean pass rate must not be below the low bound of the previous result's
// 95% interval. A plain comparison of means would fail on noise (with
// three epochs, one expectation flipping moves a mean by a third), while
// the previous interval is as wide as the previous result's own spread
// says the mean could be. When the previous result had fewer than two
// cells there, its interval is its mean, and the comparison is plain.
// Evals or models the previous result did not have cannot regress and
// are not compared; ones it had and this result has no graded cell of
// are missed.
func ApplyGate(res *record.EvalResult, g GateOptions, previous *record.EvalResult) {
	gate := &record.EvalGate{MinPassRate: g.MinPassRate, MinDelta: g.MinDelta, NoRegressionFrom: g.NoRegressionFrom}
	if g.MinPassRate != nil {
		gate.Missed = append(gate.Missed, minPassRate(res, *g.MinPassRate)...)
	}
	if g.MinDelta != nil {
		gate.Missed = append(gate.Missed, minDelta(res, *g.MinDelta)...)
	}
	if g.NoRegressionFrom != "" {
		if previous == nil {
			gate.Missed = append(gate.Missed, fmt.Sprintf("--no-regression-from %s: no previous result to compare with", g.NoRegressionFrom))
		} else {
			gate.Missed = append(gate.Missed, regressions(res, previous, g.NoRegressionFrom)...)
		}
	}
	gate.Met = len(gate.Missed) == 0
	res.Gate = gate
	if res.Status == StatusIncomplete {
		return
	}
	if gate.Met {
		res.Status, res.ExitCode = StatusPassed, 0
	} else {
		res.Status, res.ExitCode = StatusFailed, 1
	}
}

func minPassRate(res *record.EvalResult, bound float64) []string {
	var missed []string
	for _, mod := range resultModels(res) {
		s := findSummary(res.Summaries, "", record.ConfigWithSkill, mod)
		switch {
		case s == nil || s.PassRate.N == 0:
			missed = append(missed, fmt.Sprintf("with_skill has no graded cell on %s: --min-pass-rate %s cannot be met (n=0)", mod, num(bound)))
		case s.PassRate.Mean < bound-epsilon:
			missed = append(missed, fmt.Sprintf("with_skill pass rate %.2f on %s is below --min-pass-rate %s (n=%d)", s.PassRate.Mean, mod, num(bound), s.PassRate.N))
		}
	}
	return missed
}

func minDelta(res *record.EvalResult, bound float64) []string {
	var missed []string
	for _, mod := range resultModels(res) {
		w := findSummary(res.Summaries, "", record.ConfigWithSkill, mod)
		wo := findSummary(res.Summaries, "", record.ConfigWithoutSkill, mod)
		if w == nil || wo == nil || w.PassRate.N == 0 || wo.PassRate.N == 0 {
			missed = append(missed, fmt.Sprintf("with_skill − without_skill on %s cannot be measured: --min-delta %s needs graded cells of both (n=%d and n=%d)", mod, num(bound), nOf(w), nOf(wo)))
			continue
		}
		if d := w.PassRate.Mean - wo.PassRate.Mean; d < bound-epsilon {
			missed = append(missed, fmt.Sprintf("with_skill − without_skill pass rate %+.2f on %s is below --min-delta %s (with_skill %.2f, n=%d; without_skill %.2f, n=%d)", d, mod, num(bound), w.PassRate.Mean, w.PassRate.N, wo.PassRate.Mean, wo.PassRate.N))
		}
	}
	return missed
}

func regressions(res, prev *record.EvalResult, from string) []string {
	var missed []string
	check := func(what string, now, before *record.EvalSummary) {
		if before == nil || before.PassRate.N == 0 {
			return
		}
		if now == nil || now.PassRate.N == 0 {
			missed = append(missed, fmt.Sprintf("%s: with_skill has no graded cell now, and had a pass rate of %.2f (n=%d) in %s", what, before.PassRate.Mean, before.PassRate.N, from))
			return
		}
		if now.PassRate.Mean < before.PassRate.Low95-epsilon {
			missed = append(missed, fmt.Sprintf("%s: with_skill pass rate %.2f (n=%d) is below %s's 95%% interval [%.2f, %.2f] (mean %.2f, n=%d)", what, now.PassRate.Mean, now.PassRate.N, from, before.PassRate.Low95, before.PassRate.High95, before.PassRate.Mean, before.PassRate.N))
		}
	}
	for i := range prev.Summaries {
		b := &prev.Summaries[i]
		if b.Configuration != record.ConfigWithSkill {
			continue
		}
		check("on "+b.Model, findSummary(res.Summaries, "", record.ConfigWithSkill, b.Model), b)
	}
	for i := range prev.PerEval {
		b := &prev.PerEval[i]
		if b.Configuration != record.ConfigWithSkill || !hasEval(res, b.EvalID) {
			continue
		}
		check("eval "+b.EvalID+" on "+b.Model, findSummary(res.PerEval, b.EvalID, record.ConfigWithSkill, b.Model), b)
	}
	return missed
}

// resultModels is every model a summary names, in order. A result with
// no summary at all still gets one line ("any model") for each bound to
// miss on: a gate over nothing is not met.
func resultModels(res *record.EvalResult) []string {
	var out []string
	for _, s := range res.Summaries {
		if !slices.Contains(out, s.Model) {
			out = append(out, s.Model)
		}
	}
	if len(out) == 0 {
		out = []string{"any model"}
	}
	return out
}

// hasEval says whether the eval is in this result's suite at all: an
// eval dropped from the suite is not a regression.
func hasEval(res *record.EvalResult, id string) bool {
	for _, s := range res.PerEval {
		if s.EvalID == id {
			return true
		}
	}
	return false
}

func findSummary(sums []record.EvalSummary, evalID, config, model string) *record.EvalSummary {
	for i := range sums {
		if sums[i].EvalID == evalID && sums[i].Configuration == config && sums[i].Model == model {
			return &sums[i]
		}
	}
	return nil
}

func nOf(s *record.EvalSummary) int {
	if s == nil {
		return 0
	}
	return s.PassRate.N
}

// num writes a bound as the operator wrote it (0.8, not 0.80).
func num(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
