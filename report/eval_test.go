package report

import (
	"bytes"
	"encoding/xml"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/record"
)

// evalFixture is an eval of two cells per configuration on one model,
// with a hostile text in every field a model, a grader or a skill writes.
func evalFixture() (record.EvalManifest, record.EvalResult, []record.EvalGrading) {
	yes := true
	m := record.EvalManifest{EvalID: "ev1", Skill: hostile, Models: []string{hostile}, Epochs: 2, GraderModel: hostile,
		Configurations: []string{record.ConfigWithSkill, record.ConfigWithoutSkill, record.ConfigTrigger}}
	var gs []record.EvalGrading
	cost := 0.01
	for _, conf := range []string{record.ConfigWithSkill, record.ConfigWithoutSkill} {
		for ep := 1; ep <= 2; ep++ {
			c := record.EvalCell{ID: conf + string(rune('0'+ep)), EvalID: "1", EvalName: hostile, Configuration: conf, Model: hostile, Epoch: ep}
			m.Cells = append(m.Cells, c)
			passed := conf == record.ConfigWithSkill
			st := record.GradeFailed
			if passed {
				st = record.GradePassed
			}
			gs = append(gs, record.EvalGrading{Cell: c,
				Run: record.EvalRun{Status: "succeeded", Answer: hostile + " answer of " + conf, Tokens: 100, DurationMs: 2000, CostUSD: &cost},
				Expectations: []record.GradedItem{
					{Text: hostile, Passed: passed, Status: st, Evidence: hostile, Kind: "expectation"},
					{Text: "file exists", Passed: true, Status: record.GradePassed, Evidence: "found", Kind: "file-exists"},
				},
				Summary: record.GradingSummary{Passed: map[bool]int{true: 2, false: 1}[passed], Total: 2, PassRate: map[bool]float64{true: 1, false: 0.5}[passed]},
			})
		}
	}
	tc := record.EvalCell{ID: "t1", EvalID: "t1", EvalName: hostile, Configuration: record.ConfigTrigger, Model: hostile, Epoch: 1, ShouldTrigger: &yes}
	m.Cells = append(m.Cells, tc)
	gs = append(gs, record.EvalGrading{Cell: tc, Run: record.EvalRun{Status: "succeeded"}, Triggered: &yes})
	// A grading naming no cell is not shown.
	gs = append(gs, record.EvalGrading{Cell: record.EvalCell{ID: "forged", EvalID: "9"}, Run: record.EvalRun{Answer: "FORGED"}})

	stat := func(mean, sd, lo, hi float64) record.Stat {
		return record.Stat{N: 2, Mean: mean, Stddev: sd, Min: mean, Max: mean, Low95: lo, High95: hi}
	}
	res := record.EvalResult{EvalID: "ev1", Skill: hostile, Status: "failed", ExitCode: 1, Message: hostile,
		Cells: map[string]int{"graded": 5, hostile: 1},
		Summaries: []record.EvalSummary{
			{Configuration: record.ConfigWithSkill, Model: hostile, PassRate: stat(1, 0, 1, 1), Seconds: stat(2, 0, 2, 2), Tokens: stat(100, 0, 100, 100)},
			{Configuration: record.ConfigWithoutSkill, Model: hostile, PassRate: stat(0.5, 0, 0.5, 0.5), Seconds: stat(2, 0, 2, 2), Tokens: stat(100, 0, 100, 100)},
		},
		Deltas:            []record.EvalDelta{{Model: hostile, Of: record.ConfigWithSkill, Minus: record.ConfigWithoutSkill, PassRate: 0.5}},
		NonDiscriminating: []record.NonDiscriminating{{EvalID: "1", Text: hostile, Always: "passed"}},
		Triggers:          []record.TriggerSummary{{Model: hostile, N: 1, TruePositives: 1, Precision: 1, Recall: 1, Accuracy: 1}},
		Gate:              &record.EvalGate{Missed: []string{hostile}},
	}
	for _, s := range res.Summaries {
		s.EvalID = "1"
		res.PerEval = append(res.PerEval, s)
	}
	return m, res, gs
}

func TestEvalHTMLEscapesEveryText(t *testing.T) {
	m, res, gs := evalFixture()
	var b bytes.Buffer
	if err := EvalHTML(&b, m, res, gs, Verdict{Checked: true, OK: false, Problem: hostile}, time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if mk := rawMarkup.FindString(page); mk != "" {
		t.Errorf("%q reached the HTML as markup", mk)
	}
	if !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("the hostile text is not shown escaped")
	}
	for _, ref := range []string{"<script", "<link", "src=\"http", "href=\"http", "@import", "url(http"} {
		if strings.Contains(page, ref) {
			t.Errorf("the page refers to something outside itself: %s", ref)
		}
	}
	for _, want := range []string{
		`id="unverified"`,
		"1.00 ± 0.00 [1.00, 1.00]", "0.50 ± 0.00 [0.50, 0.50]",
		"with_skill − without_skill: pass rate &#43;0.50",
		"answer of with_skill", "answer of without_skill",
		`class="mark passed"`, `class="mark failed"`, "(file-exists)",
		`<svg class="spread"`, "1 of 1",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(page, "FORGED") {
		t.Error("a grading naming no cell of the manifest is shown")
	}
	// The answers of one epoch are side by side: one row holds both.
	row := regexp.MustCompile(`(?s)<div class="answers">.*?</div>\n`).FindString(page)
	if !strings.Contains(row, "with_skill") || !strings.Contains(row, "without_skill") {
		t.Errorf("the answers of an epoch are not side by side: %s", row)
	}
}

func TestSpreadChart(t *testing.T) {
	rows := []record.EvalSummary{
		{Configuration: record.ConfigWithSkill, PassRate: record.Stat{N: 3, Mean: 0.5, Low95: 0.25, High95: 0.75}},
		{Configuration: hostile, PassRate: record.Stat{N: 1, Mean: 1, Low95: 1, High95: 1}},
		{Configuration: record.ConfigOldSkill},
	}
	svg := string(spreadChart(rows, func(c string) []float64 {
		return map[string][]float64{record.ConfigWithSkill: {0, 0.5, 1}, hostile: {1}}[c]
	}))
	if err := xml.Unmarshal([]byte(svg), new(struct{})); err != nil {
		t.Fatalf("the chart is not well-formed: %v\n%s", err, svg)
	}
	if rawMarkup.MatchString(svg) {
		t.Errorf("a name reached the chart as markup: %s", svg)
	}
	for _, want := range []string{
		`<rect class="mean" x="110" y="20" width="200.0"`,    // mean 0.5 of 400
		`<path class="ci" d="M210.0,16 V34 M210.0,25 H410.0`, // [0.25, 0.75]
		`<circle class="cell" cx="110.0"`, `<circle class="cell" cx="510.0"`,
		"no graded cell",
	} {
		if !strings.Contains(svg, want) {
			t.Errorf("chart lacks %q:\n%s", want, svg)
		}
	}
	if n := strings.Count(svg, `class="ci"`); n != 1 {
		t.Errorf("%d intervals drawn, want 1 (n=1 has none)", n)
	}
}
