package scorecard

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/harness-dev/harness/record"
)

// fixture builds a manifest and its gradings cell by cell.
type fixture struct {
	m        record.EvalManifest
	gradings []record.EvalGrading
}

func newFixture(configs, models []string) *fixture {
	return &fixture{m: record.EvalManifest{EvalID: "ev1", Skill: "pdf", Configurations: configs, Models: models, Epochs: 1}}
}

// cell adds a cell; items are "text=passed|failed|ungraded".
func (f *fixture) cell(evalID, config, model string, epoch int, graded bool, durMs, tokens int64, cost *float64, runStatus string, items ...string) {
	id := fmt.Sprintf("%s-%s-%s-%d", evalID, config, model, epoch)
	c := record.EvalCell{ID: id, EvalID: evalID, Configuration: config, Model: model, Epoch: epoch}
	f.m.Cells = append(f.m.Cells, c)
	if !graded {
		return
	}
	g := record.EvalGrading{Cell: c, Run: record.EvalRun{Status: runStatus, DurationMs: durMs, Tokens: tokens, CostUSD: cost}}
	for _, it := range items {
		text, st, _ := strings.Cut(it, "=")
		g.Expectations = append(g.Expectations, record.GradedItem{Text: text, Status: st, Passed: st == record.GradePassed, Kind: "expectation"})
		g.Summary.Total++
		switch st {
		case record.GradePassed:
			g.Summary.Passed++
		case record.GradeFailed:
			g.Summary.Failed++
		default:
			g.Summary.Ungraded++
		}
	}
	if g.Summary.Total > 0 {
		g.Summary.PassRate = float64(g.Summary.Passed) / float64(g.Summary.Total)
	}
	f.gradings = append(f.gradings, g)
}

// rated adds a graded cell with a pass rate out of 5 items.
func (f *fixture) rated(evalID, config, model string, epoch, passed int, durMs, tokens int64) {
	var items []string
	for i := range 5 {
		st := record.GradeFailed
		if i < passed {
			st = record.GradePassed
		}
		items = append(items, fmt.Sprintf("item %d=%s", i, st))
	}
	f.cell(evalID, config, model, epoch, true, durMs, tokens, nil, runSucceeded, items...)
}

func (f *fixture) trigger(model string, i int, should bool, triggered *bool) {
	id := fmt.Sprintf("t%d-%s", i, model)
	c := record.EvalCell{ID: id, EvalID: fmt.Sprintf("t%d", i), Configuration: record.ConfigTrigger, Model: model, Epoch: 1, ShouldTrigger: &should}
	f.m.Cells = append(f.m.Cells, c)
	f.gradings = append(f.gradings, record.EvalGrading{Cell: c, Run: record.EvalRun{Status: runSucceeded}, Triggered: triggered})
}

func ptr[T any](v T) *T { return &v }

func near(a, b float64) bool { return math.Abs(a-b) < 1e-4 }

func TestDescribe(t *testing.T) {
	cases := []struct {
		name   string
		xs     []float64
		lo, hi float64
		want   record.Stat
	}{
		{name: "empty", xs: nil, lo: 0, hi: 1, want: record.Stat{}},
		{name: "one value has no spread and no interval", xs: []float64{0.4}, lo: 0, hi: 1,
			want: record.Stat{N: 1, Mean: 0.4, Min: 0.4, Max: 0.4, Low95: 0.4, High95: 0.4}},
		// s = sqrt(0.08/3) = 0.163299; t(3) = 3.182; half = 3.182*s/2 = 0.259809
		{name: "pass rates clamped to 1", xs: []float64{0.6, 0.8, 1.0, 0.8}, lo: 0, hi: 1,
			want: record.Stat{N: 4, Mean: 0.8, Stddev: 0.163299, Min: 0.6, Max: 1, Low95: 0.540191, High95: 1}},
		// s = 12.909944; half = 3.182*s/2 = 20.539721
		{name: "seconds", xs: []float64{10, 20, 30, 40}, lo: 0, hi: math.Inf(1),
			want: record.Stat{N: 4, Mean: 25, Stddev: 12.909944, Min: 10, Max: 40, Low95: 4.460279, High95: 45.539721}},
		// two values: t(1) = 12.706, s = 0.707107, half = 12.706*s/sqrt2 = 6.353
		{name: "two values, wide interval clamped both sides", xs: []float64{0, 1}, lo: 0, hi: 1,
			want: record.Stat{N: 2, Mean: 0.5, Stddev: 0.707107, Min: 0, Max: 1, Low95: 0, High95: 1}},
		{name: "all equal", xs: []float64{1, 1, 1}, lo: 0, hi: 1,
			want: record.Stat{N: 3, Mean: 1, Min: 1, Max: 1, Low95: 1, High95: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Describe(tc.xs, tc.lo, tc.hi)
			if got.N != tc.want.N || !near(got.Mean, tc.want.Mean) || !near(got.Stddev, tc.want.Stddev) ||
				!near(got.Min, tc.want.Min) || !near(got.Max, tc.want.Max) || !near(got.Low95, tc.want.Low95) || !near(got.High95, tc.want.High95) {
				t.Fatalf("Describe(%v) = %+v, want %+v", tc.xs, got, tc.want)
			}
		})
	}
}

func TestTQuantile(t *testing.T) {
	cases := []struct {
		df   int
		want float64
	}{{1, 12.706}, {2, 4.303}, {9, 2.262}, {30, 2.042}, {35, 2.042}, {40, 2.021}, {59, 2.021}, {60, 2.000}, {500, 1.980}, {5000, 1.960}}
	for _, tc := range cases {
		if got := tQuantile975(tc.df); got != tc.want {
			t.Errorf("t(%d) = %v, want %v", tc.df, got, tc.want)
		}
	}
}

func TestSummarize(t *testing.T) {
	all := []string{record.ConfigWithSkill, record.ConfigWithoutSkill, record.ConfigOldSkill}

	t.Run("summaries, per eval and deltas with known numbers", func(t *testing.T) {
		f := newFixture(all[:2], []string{"m1"})
		// with_skill: 5/5, 4/5 on eval 1; 3/5, 4/5 on eval 2 -> 1, .8, .6, .8
		f.rated("1", record.ConfigWithSkill, "m1", 1, 5, 10000, 100)
		f.rated("1", record.ConfigWithSkill, "m1", 2, 4, 20000, 200)
		f.rated("2", record.ConfigWithSkill, "m1", 1, 3, 30000, 300)
		f.rated("2", record.ConfigWithSkill, "m1", 2, 4, 40000, 400)
		// without_skill: 1/5 everywhere -> .2, n=4
		for _, e := range []string{"1", "2"} {
			for ep := 1; ep <= 2; ep++ {
				f.rated(e, record.ConfigWithoutSkill, "m1", ep, 1, 5000, 50)
			}
		}
		res := Summarize(f.m, f.gradings)
		if len(res.Summaries) != 2 {
			t.Fatalf("summaries = %+v", res.Summaries)
		}
		w := res.Summaries[0]
		if w.Configuration != record.ConfigWithSkill || w.PassRate.N != 4 || !near(w.PassRate.Mean, 0.8) || !near(w.PassRate.Stddev, 0.163299) || !near(w.PassRate.Low95, 0.540191) {
			t.Errorf("with_skill = %+v", w.PassRate)
		}
		if !near(w.Seconds.Mean, 25) || !near(w.Tokens.Mean, 250) || w.CostUSD != nil {
			t.Errorf("with_skill seconds %+v tokens %+v cost %v", w.Seconds, w.Tokens, w.CostUSD)
		}
		if len(res.Deltas) != 1 || !near(res.Deltas[0].PassRate, 0.6) || !near(res.Deltas[0].Seconds, 20) || !near(res.Deltas[0].Tokens, 200) || res.Deltas[0].Minus != record.ConfigWithoutSkill {
			t.Errorf("deltas = %+v", res.Deltas)
		}
		if len(res.PerEval) != 4 || res.PerEval[0].EvalID != "1" || !near(res.PerEval[0].PassRate.Mean, 0.9) || res.PerEval[2].EvalID != "2" || !near(res.PerEval[2].PassRate.Mean, 0.7) {
			t.Errorf("per eval = %+v", res.PerEval)
		}
		if res.Cells[CellGraded] != 8 || res.Cells[CellNotRun] != 0 {
			t.Errorf("cells = %v", res.Cells)
		}
		if res.Usage.TotalTokens != 100+200+300+400+4*50 {
			t.Errorf("usage = %+v", res.Usage)
		}
		if res.Type != record.TypeEvalResult || res.Version != record.EvalVersion {
			t.Errorf("envelope = %+v", res.Envelope)
		}
	})

	t.Run("old_skill delta per model", func(t *testing.T) {
		f := newFixture(all, []string{"m1", "m2"})
		f.rated("1", record.ConfigWithSkill, "m1", 1, 5, 1000, 10)
		f.rated("1", record.ConfigOldSkill, "m1", 1, 2, 1000, 10)
		f.rated("1", record.ConfigWithSkill, "m2", 1, 4, 1000, 10)
		f.rated("1", record.ConfigWithoutSkill, "m2", 1, 4, 1000, 10)
		res := Summarize(f.m, f.gradings)
		want := []string{"m1 old_skill +0.60", "m2 without_skill +0.00"}
		var got []string
		for _, d := range res.Deltas {
			got = append(got, fmt.Sprintf("%s %s %+.2f", d.Model, d.Minus, d.PassRate))
		}
		if strings.Join(got, ";") != strings.Join(want, ";") {
			t.Errorf("deltas = %v, want %v", got, want)
		}
	})

	t.Run("ungraded counted as not passed and apart; not run and failed runs counted", func(t *testing.T) {
		f := newFixture(all[:1], []string{"m1"})
		f.cell("1", record.ConfigWithSkill, "m1", 1, true, 1000, 10, nil, runSucceeded, "a=passed", "b=ungraded", "c=ungraded", "d=failed")
		f.cell("1", record.ConfigWithSkill, "m1", 2, true, 1000, 10, nil, "failed", "a=failed", "b=failed", "c=failed", "d=failed")
		f.cell("1", record.ConfigWithSkill, "m1", 3, false, 0, 0, nil, "")
		res := Summarize(f.m, f.gradings)
		s := res.Summaries[0]
		if s.PassRate.N != 2 || !near(s.PassRate.Mean, 0.125) || s.Ungraded != 2 || s.RunFailed != 1 {
			t.Errorf("summary = %+v", s)
		}
		if res.Cells[CellGraded] != 2 || res.Cells[CellNotRun] != 1 || res.Cells[CellRunFailed] != 1 {
			t.Errorf("cells = %v", res.Cells)
		}
	})

	t.Run("a configuration with no graded cell is shown with n=0", func(t *testing.T) {
		f := newFixture(all[:2], []string{"m1"})
		f.rated("1", record.ConfigWithSkill, "m1", 1, 5, 1000, 10)
		f.cell("1", record.ConfigWithoutSkill, "m1", 1, false, 0, 0, nil, "")
		res := Summarize(f.m, f.gradings)
		if len(res.Summaries) != 2 || res.Summaries[1].PassRate.N != 0 || len(res.Deltas) != 0 {
			t.Errorf("summaries = %+v deltas = %+v", res.Summaries, res.Deltas)
		}
	})

	t.Run("cost only when every cell has one", func(t *testing.T) {
		f := newFixture(all[:2], []string{"m1"})
		f.cell("1", record.ConfigWithSkill, "m1", 1, true, 1000, 10, ptr(0.5), runSucceeded, "a=passed")
		f.cell("1", record.ConfigWithSkill, "m1", 2, true, 1000, 10, ptr(1.5), runSucceeded, "a=passed")
		f.cell("1", record.ConfigWithoutSkill, "m1", 1, true, 1000, 10, ptr(0.5), runSucceeded, "a=passed")
		f.cell("1", record.ConfigWithoutSkill, "m1", 2, true, 1000, 10, nil, runSucceeded, "a=passed")
		res := Summarize(f.m, f.gradings)
		if c := res.Summaries[0].CostUSD; c == nil || !near(c.Mean, 1) {
			t.Errorf("with_skill cost = %+v", c)
		}
		if res.Summaries[1].CostUSD != nil || res.CostUSD != nil {
			t.Errorf("without_skill cost = %+v, total = %v: a cell has none", res.Summaries[1].CostUSD, res.CostUSD)
		}
	})

	t.Run("a grading for a cell not in the manifest is left out", func(t *testing.T) {
		f := newFixture(all[:1], []string{"m1"})
		f.rated("1", record.ConfigWithSkill, "m1", 1, 5, 1000, 10)
		stray := f.gradings[0]
		stray.Cell.ID = "forged"
		stray.Summary.PassRate = 0
		res := Summarize(f.m, append(f.gradings, stray, f.gradings[0]))
		if res.Cells[CellUnknown] != 1 || res.Summaries[0].PassRate.N != 1 || res.Summaries[0].PassRate.Mean != 1 {
			t.Errorf("cells = %v summary = %+v", res.Cells, res.Summaries[0].PassRate)
		}
	})
}

func TestNonDiscriminating(t *testing.T) {
	cases := []struct {
		name    string
		configs []string
		cells   [][]string // per cell: config, then items
		want    []string
	}{
		{
			name:    "always passed and always failed flagged, the rest not",
			configs: []string{record.ConfigWithSkill, record.ConfigWithoutSkill},
			cells: [][]string{
				{record.ConfigWithSkill, "is pdf=passed", "has sum=passed", "named=failed"},
				{record.ConfigWithSkill, "is pdf=passed", "has sum=passed", "named=failed"},
				{record.ConfigWithoutSkill, "is pdf=passed", "has sum=failed", "named=failed"},
			},
			want: []string{"1 is pdf passed", "1 named failed"},
		},
		{
			name:    "one configuration graded says nothing",
			configs: []string{record.ConfigWithSkill, record.ConfigWithoutSkill},
			cells: [][]string{
				{record.ConfigWithSkill, "is pdf=passed"},
				{record.ConfigWithSkill, "is pdf=passed"},
			},
			want: nil,
		},
		{
			name:    "ungraded anywhere is not known to be the same",
			configs: []string{record.ConfigWithSkill, record.ConfigWithoutSkill},
			cells: [][]string{
				{record.ConfigWithSkill, "is pdf=passed", "x=ungraded"},
				{record.ConfigWithoutSkill, "is pdf=ungraded", "x=ungraded"},
			},
			want: nil,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(tc.configs, []string{"m1"})
			for i, c := range tc.cells {
				f.cell("1", c[0], "m1", i+1, true, 1000, 10, nil, runSucceeded, c[1:]...)
			}
			res := Summarize(f.m, f.gradings)
			var got []string
			for _, nd := range res.NonDiscriminating {
				got = append(got, nd.EvalID+" "+nd.Text+" "+nd.Always)
			}
			if strings.Join(got, ";") != strings.Join(tc.want, ";") {
				t.Errorf("non-discriminating = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestTriggers(t *testing.T) {
	yes, no := ptr(true), ptr(false)
	type q struct {
		should    bool
		triggered *bool
	}
	cases := []struct {
		name           string
		queries        []q
		tp, fp, tn, fn int
		prec, rec, acc float64
	}{
		{name: "mixed", queries: []q{{true, yes}, {true, no}, {false, yes}, {false, no}, {true, yes}},
			tp: 2, fp: 1, tn: 1, fn: 1, prec: 2.0 / 3, rec: 2.0 / 3, acc: 0.6},
		{name: "never triggered: precision has no denominator and is 1", queries: []q{{true, no}, {false, no}},
			tp: 0, fp: 0, tn: 1, fn: 1, prec: 1, rec: 0, acc: 0.5},
		{name: "no should-trigger query: recall has no denominator and is 1", queries: []q{{false, no}, {false, yes}},
			tp: 0, fp: 1, tn: 1, fn: 0, prec: 0, rec: 1, acc: 0.5},
		{name: "undecided queries count as wrong", queries: []q{{true, nil}, {false, nil}},
			tp: 0, fp: 1, tn: 0, fn: 1, prec: 0, rec: 0, acc: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture([]string{record.ConfigTrigger}, []string{"m1"})
			for i, qq := range tc.queries {
				f.trigger("m1", i, qq.should, qq.triggered)
			}
			res := Summarize(f.m, f.gradings)
			if len(res.Triggers) != 1 {
				t.Fatalf("triggers = %+v", res.Triggers)
			}
			ts := res.Triggers[0]
			if ts.N != len(tc.queries) || ts.TruePositives != tc.tp || ts.FalsePositives != tc.fp || ts.TrueNegatives != tc.tn || ts.FalseNegatives != tc.fn ||
				!near(ts.Precision, tc.prec) || !near(ts.Recall, tc.rec) || !near(ts.Accuracy, tc.acc) {
				t.Errorf("triggers = %+v", ts)
			}
			if len(res.Summaries) != 0 {
				t.Errorf("trigger cells made summaries: %+v", res.Summaries)
			}
		})
	}
}
