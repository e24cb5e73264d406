package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/harness-dev/harness/record"
)

//go:embed eval.html.tmpl
var evalTemplate string

// EvalPage is an eval directory as a person reads it: the numbers with
// their spread, the gate, and per eval every expectation with its
// evidence and the configurations' answers side by side.
type EvalPage struct {
	Title     string
	Generated time.Time
	Manifest  record.EvalManifest
	Result    record.EvalResult
	// Verdict is how the eval directory verified; Banner says what does
	// not, first thing on the page.
	Verdict Verdict
	Banner  []string
	Models  []EvalModel
	Evals   []EvalSection
	// Triggers are the trigger queries, one row per query and model.
	Triggers []TriggerRow
}

// EvalModel is one model's summaries with a chart of their spread.
type EvalModel struct {
	Model  string
	Rows   []record.EvalSummary
	Deltas []record.EvalDelta
	Chart  template.HTML // inline SVG, built from numbers and escaped names
}

// EvalSection is one eval.
type EvalSection struct {
	ID, Name string
	Anchor   string
	Rows     []record.EvalSummary
	// Columns are the eval's graded cells; each item has a mark per
	// column.
	Columns []EvalColumn
	Items   []ItemRow
	Answers []AnswerRow
}

// EvalColumn is one graded cell of an eval.
type EvalColumn struct {
	Cell record.EvalCell
	Run  record.EvalRun
	Rate float64
}

// ItemRow is one expectation or check across an eval's cells.
type ItemRow struct {
	Text, Kind string
	Marks      []Mark
}

// Mark is an item's outcome in one cell ("" status: not in that cell).
type Mark struct {
	Status, Evidence string
}

// AnswerRow is the answers of one model and epoch, one per
// configuration, side by side.
type AnswerRow struct {
	Model   string
	Epoch   int
	Answers []AnswerCell
}

// AnswerCell is one configuration's answer ("not run" when its cell was
// not graded).
type AnswerCell struct {
	Configuration string
	Graded        bool
	Status        string
	Rate          float64
	Tokens        int64
	Seconds       float64
	Answer        string
}

// TriggerRow is one trigger query on one model over its epochs.
type TriggerRow struct {
	Query, Model  string
	ShouldTrigger bool
	Triggered     []string // per graded epoch: yes, no, not decided
	Right, N      int
}

// BuildEvalPage puts an eval's manifest, result and gradings into a page.
// A grading is matched to its cell by id, and the manifest's cell is the
// one shown; a grading naming no cell is left out.
func BuildEvalPage(m record.EvalManifest, res record.EvalResult, gradings []record.EvalGrading, verdict Verdict, now time.Time) *EvalPage {
	p := &EvalPage{Title: "harness eval " + m.Skill, Generated: now, Manifest: m, Result: res, Verdict: verdict}
	if verdict.Checked && !verdict.OK {
		p.Banner = []string{verdict.Problem}
	}
	graded := map[string]*record.EvalGrading{}
	for i := range gradings {
		if _, dup := graded[gradings[i].Cell.ID]; !dup {
			graded[gradings[i].Cell.ID] = &gradings[i]
		}
	}
	known := map[string]bool{}
	for _, c := range m.Cells {
		known[c.ID] = true
	}
	for id := range graded {
		if !known[id] {
			delete(graded, id)
		}
	}

	for _, s := range res.Summaries {
		i := slices.IndexFunc(p.Models, func(em EvalModel) bool { return em.Model == s.Model })
		if i < 0 {
			p.Models = append(p.Models, EvalModel{Model: s.Model})
			i = len(p.Models) - 1
		}
		p.Models[i].Rows = append(p.Models[i].Rows, s)
	}
	for i := range p.Models {
		em := &p.Models[i]
		for _, d := range res.Deltas {
			if d.Model == em.Model {
				em.Deltas = append(em.Deltas, d)
			}
		}
		em.Chart = spreadChart(em.Rows, func(config string) []float64 {
			var xs []float64
			for _, c := range m.Cells {
				if g, ok := graded[c.ID]; ok && c.Model == em.Model && c.Configuration == config {
					xs = append(xs, g.Summary.PassRate)
				}
			}
			return xs
		})
	}

	for _, c := range m.Cells {
		if c.Configuration == record.ConfigTrigger {
			continue
		}
		if !slices.ContainsFunc(p.Evals, func(e EvalSection) bool { return e.ID == c.EvalID }) {
			p.Evals = append(p.Evals, evalSection(m, res, graded, c.EvalID, len(p.Evals)))
		}
	}
	p.Triggers = triggerRows(m, graded)
	return p
}

func evalSection(m record.EvalManifest, res record.EvalResult, graded map[string]*record.EvalGrading, id string, n int) EvalSection {
	sec := EvalSection{ID: id, Anchor: fmt.Sprintf("eval-%d", n+1)}
	for _, s := range res.PerEval {
		if s.EvalID == id {
			sec.Rows = append(sec.Rows, s)
		}
	}
	var configs []string
	type slot struct {
		model string
		epoch int
	}
	var slots []slot
	for _, c := range m.Cells {
		if c.EvalID != id || c.Configuration == record.ConfigTrigger {
			continue
		}
		if sec.Name == "" {
			sec.Name = c.EvalName
		}
		if !slices.Contains(configs, c.Configuration) {
			configs = append(configs, c.Configuration)
		}
		if s := (slot{c.Model, c.Epoch}); !slices.Contains(slots, s) {
			slots = append(slots, s)
		}
		g, ok := graded[c.ID]
		if !ok {
			continue
		}
		sec.Columns = append(sec.Columns, EvalColumn{Cell: c, Run: g.Run, Rate: g.Summary.PassRate})
	}
	// Items by text, in the order they first appear, with a mark per
	// graded cell.
	for ci, col := range sec.Columns {
		for _, it := range graded[col.Cell.ID].Expectations {
			i := slices.IndexFunc(sec.Items, func(r ItemRow) bool { return r.Text == it.Text })
			if i < 0 {
				sec.Items = append(sec.Items, ItemRow{Text: it.Text, Kind: it.Kind, Marks: make([]Mark, len(sec.Columns))})
				i = len(sec.Items) - 1
			}
			if sec.Items[i].Marks[ci].Status == "" {
				sec.Items[i].Marks[ci] = Mark{Status: it.State(), Evidence: it.Evidence}
			}
		}
	}
	for _, s := range slots {
		row := AnswerRow{Model: s.model, Epoch: s.epoch}
		for _, conf := range configs {
			a := AnswerCell{Configuration: conf, Status: "not run"}
			for _, c := range m.Cells {
				if c.EvalID != id || c.Configuration != conf || c.Model != s.model || c.Epoch != s.epoch {
					continue
				}
				if g, ok := graded[c.ID]; ok {
					a = AnswerCell{Configuration: conf, Graded: true, Status: g.Run.Status, Rate: g.Summary.PassRate,
						Tokens: g.Run.Tokens, Seconds: float64(g.Run.DurationMs) / 1000, Answer: g.Run.Answer}
				}
			}
			row.Answers = append(row.Answers, a)
		}
		sec.Answers = append(sec.Answers, row)
	}
	return sec
}

func triggerRows(m record.EvalManifest, graded map[string]*record.EvalGrading) []TriggerRow {
	var rows []TriggerRow
	for _, c := range m.Cells {
		if c.Configuration != record.ConfigTrigger || c.ShouldTrigger == nil {
			continue
		}
		query := c.EvalName
		if query == "" {
			query = c.EvalID
		}
		i := slices.IndexFunc(rows, func(r TriggerRow) bool { return r.Query == query && r.Model == c.Model })
		if i < 0 {
			rows = append(rows, TriggerRow{Query: query, Model: c.Model, ShouldTrigger: *c.ShouldTrigger})
			i = len(rows) - 1
		}
		g, ok := graded[c.ID]
		if !ok {
			rows[i].Triggered = append(rows[i].Triggered, "not run")
			continue
		}
		rows[i].N++
		switch {
		case g.Triggered == nil:
			rows[i].Triggered = append(rows[i].Triggered, "not decided")
		case *g.Triggered:
			rows[i].Triggered = append(rows[i].Triggered, "yes")
		default:
			rows[i].Triggered = append(rows[i].Triggered, "no")
		}
		if g.Triggered != nil && *g.Triggered == *c.ShouldTrigger {
			rows[i].Right++
		}
	}
	return rows
}

// WriteEvalHTML renders an eval page as one self-contained HTML file, as
// WriteHTML does a run's: styles inline, no script, nothing loaded, every
// text escaped by html/template.
func WriteEvalHTML(w io.Writer, p *EvalPage) error {
	t, err := template.New("eval").Funcs(template.FuncMap{
		"time":   func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
		"rate":   rateText,
		"spread": func(s record.Stat, format string) string { return spreadText(s, format) },
		"f2":     func(f float64) string { return fmt.Sprintf("%.2f", f) },
		"signed": func(f float64, format string) string { return fmt.Sprintf(format, f) },
		"long":   func(s string) bool { return len(s) > foldAt || strings.Count(s, "\n") > 20 },
		"join":   strings.Join,
		"mark": func(s string) string {
			switch s {
			case record.GradePassed:
				return "✓"
			case record.GradeFailed:
				return "✗"
			case record.GradeUngraded:
				return "?"
			}
			return "—"
		},
		"cells": func(m map[string]int) string {
			var ks []string
			for k, n := range m {
				ks = append(ks, fmt.Sprintf("%d %s", n, strings.ReplaceAll(k, "_", " ")))
			}
			slices.Sort(ks)
			return strings.Join(ks, ", ")
		},
		"cost": func(c *float64) string {
			if c == nil {
				return "—"
			}
			return fmt.Sprintf("$%.4f", *c)
		},
		"num":   func(f *float64) string { return fmt.Sprint(*f) },
		"deref": func(s *record.Stat) record.Stat { return *s },
	}).Parse(evalTemplate)
	if err != nil {
		return err
	}
	return t.Execute(w, p)
}

// EvalHTML writes the page of an eval directory.
func EvalHTML(w io.Writer, m record.EvalManifest, res record.EvalResult, gradings []record.EvalGrading, verdict Verdict, now time.Time) error {
	return WriteEvalHTML(w, BuildEvalPage(m, res, gradings, verdict, now))
}

// rateText is a pass rate as "mean ± stddev [low, high]", saying so when
// there are too few cells for a spread.
func rateText(s record.Stat) string {
	switch s.N {
	case 0:
		return "—"
	case 1:
		return fmt.Sprintf("%.2f (one cell, no interval)", s.Mean)
	}
	return fmt.Sprintf("%.2f ± %.2f [%.2f, %.2f]", s.Mean, s.Stddev, s.Low95, s.High95)
}

func spreadText(s record.Stat, format string) string {
	if s.N == 0 {
		return "—"
	}
	return fmt.Sprintf(format+" ± "+format, s.Mean, s.Stddev)
}

// spreadChart draws, per configuration, every cell's pass rate as a dot,
// the mean as a bar and the 95% interval as a whisker, on one 0–1 axis.
// Only numbers and escaped names go in, so it is safe to mark as HTML.
func spreadChart(rows []record.EvalSummary, cells func(config string) []float64) template.HTML {
	if len(rows) == 0 {
		return ""
	}
	const left, width, rowH, top = 110, 400, 34, 8
	h := top + len(rows)*rowH + 22
	x := func(f float64) float64 { return left + max(0, min(1, f))*width }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="spread" role="img" aria-label="pass rate per cell, mean and 95%% interval" width="%d" height="%d" viewBox="0 0 %d %d">`, left+width+20, h, left+width+20, h)
	for i, r := range rows {
		y := top + i*rowH
		mid := y + rowH/2
		fmt.Fprintf(&b, `<text class="label" x="%d" y="%d">%s</text>`, left-8, mid+4, template.HTMLEscapeString(shorten(r.Configuration, 16)))
		fmt.Fprintf(&b, `<line class="axis" x1="%d" y1="%d" x2="%d" y2="%d"/>`, left, mid, left+width, mid)
		if r.PassRate.N == 0 {
			fmt.Fprintf(&b, `<text class="none" x="%d" y="%d">no graded cell</text>`, left+6, mid-4)
			continue
		}
		fmt.Fprintf(&b, `<rect class="mean" x="%d" y="%d" width="%.1f" height="%d"><title>mean %.2f (n=%d)</title></rect>`, left, mid-5, x(r.PassRate.Mean)-left, 10, r.PassRate.Mean, r.PassRate.N)
		if r.PassRate.N > 1 {
			lo, hi := x(r.PassRate.Low95), x(r.PassRate.High95)
			fmt.Fprintf(&b, `<path class="ci" d="M%.1f,%d V%d M%.1f,%d H%.1f M%.1f,%d V%d"><title>95%% interval [%.2f, %.2f]</title></path>`,
				lo, mid-9, mid+9, lo, mid, hi, hi, mid-9, mid+9, r.PassRate.Low95, r.PassRate.High95)
		}
		for j, v := range cells(r.Configuration) {
			// Cells with the same rate are spread a little apart so that
			// each can be counted.
			dy := (j%5 - 2) * 3
			fmt.Fprintf(&b, `<circle class="cell" cx="%.1f" cy="%d" r="3"><title>%.2f</title></circle>`, x(v), mid+dy, v)
		}
	}
	axis := top + len(rows)*rowH + 12
	for _, t := range []float64{0, 0.25, 0.5, 0.75, 1} {
		fmt.Fprintf(&b, `<text class="tick" x="%.1f" y="%d">%.2g</text>`, x(t), axis, t)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}
