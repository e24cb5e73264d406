package scorecard

import (
	"strings"
	"testing"

	"github.com/harness-dev/harness/record"
)

// gateResult is a result of two models: with_skill 0.8 (n=4) and
// without_skill 0.2 (n=4) on m1, with_skill 0.55 and without_skill 0.5
// on m2; per eval the same numbers under eval "1".
func gateResult() record.EvalResult {
	sum := func(eval, config, model string, mean, low float64, n int) record.EvalSummary {
		return record.EvalSummary{EvalID: eval, Configuration: config, Model: model, PassRate: record.Stat{N: n, Mean: mean, Low95: low, High95: 1}}
	}
	res := record.EvalResult{}
	for _, e := range []string{"", "1"} {
		sums := []record.EvalSummary{
			sum(e, record.ConfigWithSkill, "m1", 0.8, 0.6, 4),
			sum(e, record.ConfigWithoutSkill, "m1", 0.2, 0.1, 4),
			sum(e, record.ConfigWithSkill, "m2", 0.55, 0.4, 9),
			sum(e, record.ConfigWithoutSkill, "m2", 0.5, 0.3, 9),
		}
		if e == "" {
			res.Summaries = sums
		} else {
			res.PerEval = sums
		}
	}
	return res
}

func TestApplyGate(t *testing.T) {
	prevWith := func(m1Low, m2Low float64, m1N int) *record.EvalResult {
		p := gateResult()
		for _, list := range [][]record.EvalSummary{p.Summaries, p.PerEval} {
			list[0].PassRate.Low95, list[0].PassRate.N = m1Low, m1N
			list[2].PassRate.Low95 = m2Low
		}
		return &p
	}
	cases := []struct {
		name       string
		opts       GateOptions
		prev       *record.EvalResult
		status     string
		incomplete bool
		missed     []string
	}{
		{name: "no condition is met", status: StatusPassed},
		{name: "min pass rate met", opts: GateOptions{MinPassRate: ptr(0.55)}, status: StatusPassed},
		{name: "min pass rate missed on one model", opts: GateOptions{MinPassRate: ptr(0.8)}, status: StatusFailed,
			missed: []string{"with_skill pass rate 0.55 on m2 is below --min-pass-rate 0.8 (n=9)"}},
		{name: "min delta met", opts: GateOptions{MinDelta: ptr(0.05)}, status: StatusPassed},
		{name: "min delta missed", opts: GateOptions{MinDelta: ptr(0.1)}, status: StatusFailed,
			missed: []string{"with_skill − without_skill pass rate +0.05 on m2 is below --min-delta 0.1 (with_skill 0.55, n=9; without_skill 0.50, n=9)"}},
		{name: "no regression met: new means within the previous intervals", opts: GateOptions{NoRegressionFrom: "old.json"},
			prev: prevWith(0.7, 0.5, 4), status: StatusPassed},
		{name: "regression on a model and on its eval", opts: GateOptions{NoRegressionFrom: "old.json"},
			prev: prevWith(0.85, 0.5, 4), status: StatusFailed,
			missed: []string{
				"on m1: with_skill pass rate 0.80 (n=4) is below old.json's 95% interval [0.85, 1.00] (mean 0.80, n=4)",
				"eval 1 on m1: with_skill pass rate 0.80 (n=4) is below old.json's 95% interval [0.85, 1.00] (mean 0.80, n=4)",
			}},
		{name: "no previous result to compare with", opts: GateOptions{NoRegressionFrom: "old.json"}, status: StatusFailed,
			missed: []string{"--no-regression-from old.json: no previous result to compare with"}},
		{name: "an incomplete result keeps its status", opts: GateOptions{MinPassRate: ptr(0.9)}, incomplete: true, status: StatusIncomplete,
			missed: []string{
				"with_skill pass rate 0.80 on m1 is below --min-pass-rate 0.9 (n=4)",
				"with_skill pass rate 0.55 on m2 is below --min-pass-rate 0.9 (n=9)",
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := gateResult()
			if tc.incomplete {
				res.Status, res.ExitCode = StatusIncomplete, 3
			}
			ApplyGate(&res, tc.opts, tc.prev)
			if res.Status != tc.status {
				t.Errorf("status = %q, want %q", res.Status, tc.status)
			}
			wantExit := map[string]int{StatusPassed: 0, StatusFailed: 1, StatusIncomplete: 3}[tc.status]
			if res.ExitCode != wantExit {
				t.Errorf("exit = %d, want %d", res.ExitCode, wantExit)
			}
			if res.Gate == nil || res.Gate.Met != (len(tc.missed) == 0) {
				t.Fatalf("gate = %+v", res.Gate)
			}
			if strings.Join(res.Gate.Missed, "\n") != strings.Join(tc.missed, "\n") {
				t.Errorf("missed:\n%s\nwant:\n%s", strings.Join(res.Gate.Missed, "\n"), strings.Join(tc.missed, "\n"))
			}
		})
	}
}

func TestApplyGateNothingToMeasure(t *testing.T) {
	cases := []struct {
		name   string
		res    record.EvalResult
		opts   GateOptions
		prev   *record.EvalResult
		missed string
	}{
		{name: "no summary at all misses min pass rate", opts: GateOptions{MinPassRate: ptr(0.5)},
			missed: "with_skill has no graded cell on any model: --min-pass-rate 0.5 cannot be met (n=0)"},
		{name: "no without_skill misses min delta", opts: GateOptions{MinDelta: ptr(0.1)},
			res:    record.EvalResult{Summaries: []record.EvalSummary{{Configuration: record.ConfigWithSkill, Model: "m1", PassRate: record.Stat{N: 3, Mean: 1}}}},
			missed: "with_skill − without_skill on m1 cannot be measured: --min-delta 0.1 needs graded cells of both (n=3 and n=0)"},
		{name: "a model graded before and not now has regressed", opts: GateOptions{NoRegressionFrom: "old.json"},
			res:    record.EvalResult{Summaries: []record.EvalSummary{{Configuration: record.ConfigWithSkill, Model: "m1"}}},
			prev:   &record.EvalResult{Summaries: []record.EvalSummary{{Configuration: record.ConfigWithSkill, Model: "m1", PassRate: record.Stat{N: 2, Mean: 0.5}}}},
			missed: "on m1: with_skill has no graded cell now, and had a pass rate of 0.50 (n=2) in old.json"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ApplyGate(&tc.res, tc.opts, tc.prev)
			if tc.res.Status != StatusFailed || tc.res.ExitCode != 1 || len(tc.res.Gate.Missed) != 1 || tc.res.Gate.Missed[0] != tc.missed {
				t.Errorf("status %q exit %d missed %q, want %q", tc.res.Status, tc.res.ExitCode, tc.res.Gate.Missed, tc.missed)
			}
		})
	}
}
