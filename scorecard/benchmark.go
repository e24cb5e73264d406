package scorecard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/harness-dev/harness/record"
)

// benchmark.json is skill-creator's file (references/schemas.md), read by
// its viewer (eval-viewer/viewer.html, the Benchmark tab) by these exact
// field names: a run's numbers under result, the configuration as the
// viewer's grouping string, run_summary keyed by configuration with delta
// last. Nothing is added to the schema: what harness knows beyond it
// (the model of each run, ungraded items, the gate) goes into the notes.
//
// Several models: the configuration stays the viewer's string, every
// model's runs are in runs[] (each run's first note names its model and
// epoch, run_number counts across models), run_summary pools the models,
// metadata.executor_model lists them, and a note per model gives its own
// numbers. eval-result.json and benchmark.md keep them apart.
type benchmarkFile struct {
	Metadata   benchmarkMetadata `json:"metadata"`
	Runs       []benchmarkRun    `json:"runs"`
	RunSummary orderedObject     `json:"run_summary"`
	Notes      []string          `json:"notes"`
}

type benchmarkMetadata struct {
	SkillName            string `json:"skill_name"`
	SkillPath            string `json:"skill_path"`
	ExecutorModel        string `json:"executor_model"`
	AnalyzerModel        string `json:"analyzer_model"`
	Timestamp            string `json:"timestamp"`
	EvalsRun             []any  `json:"evals_run"`
	RunsPerConfiguration int    `json:"runs_per_configuration"`
}

type benchmarkRun struct {
	EvalID        any                    `json:"eval_id"`
	EvalName      string                 `json:"eval_name"`
	Configuration string                 `json:"configuration"`
	RunNumber     int                    `json:"run_number"`
	Result        benchmarkResult        `json:"result"`
	Expectations  []benchmarkExpectation `json:"expectations"`
	Notes         []string               `json:"notes"`
}

type benchmarkResult struct {
	PassRate    float64 `json:"pass_rate"`
	Passed      int     `json:"passed"`
	Failed      int     `json:"failed"`
	Total       int     `json:"total"`
	TimeSeconds float64 `json:"time_seconds"`
	Tokens      int64   `json:"tokens"`
	ToolCalls   int     `json:"tool_calls"`
	Errors      int     `json:"errors"`
}

type benchmarkExpectation struct {
	Text     string `json:"text"`
	Passed   bool   `json:"passed"`
	Evidence string `json:"evidence"`
}

type benchmarkStat struct {
	Mean   float64 `json:"mean"`
	Stddev float64 `json:"stddev"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

type benchmarkSummary struct {
	PassRate    benchmarkStat `json:"pass_rate"`
	TimeSeconds benchmarkStat `json:"time_seconds"`
	Tokens      benchmarkStat `json:"tokens"`
}

type benchmarkDelta struct {
	PassRate    string `json:"pass_rate"`
	TimeSeconds string `json:"time_seconds"`
	Tokens      string `json:"tokens"`
}

// orderedObject is a JSON object whose keys keep their order: the viewer
// takes run_summary's first two keys as the two columns it compares, and
// delta is the first minus the second.
type orderedObject []member

type member struct {
	Key   string
	Value any
}

func (o orderedObject) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(m.Key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(m.Value)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// configOrder puts with_skill first and without_skill second, as the
// viewer's columns (and its delta) expect, then old_skill.
var configOrder = []string{record.ConfigWithSkill, record.ConfigWithoutSkill, record.ConfigOldSkill}

// Benchmark writes benchmark.json for an eval's gradings and its result.
func Benchmark(m record.EvalManifest, gradings []record.EvalGrading, res record.EvalResult) ([]byte, error) {
	counts := map[string]int{}
	graded := matchGradings(m, gradings, counts)
	models := orderedModels(m)
	configs := benchmarkConfigs(m)

	out := benchmarkFile{
		Metadata: benchmarkMetadata{
			SkillName:     m.Skill,
			SkillPath:     m.SkillDir,
			ExecutorModel: strings.Join(models, ", "),
			AnalyzerModel: m.GraderModel,
			Timestamp:     time.Now().UTC().Format("2006-01-02T15:04:05Z"),
			EvalsRun:      []any{},
		},
		Runs:  []benchmarkRun{},
		Notes: []string{},
	}
	epochs := map[string]int{} // eval × configuration -> runs written
	for _, e := range orderedEvals(m) {
		out.Metadata.EvalsRun = append(out.Metadata.EvalsRun, viewerSafeID(e))
		for _, c := range configs {
			for _, mod := range models {
				for _, cell := range m.Cells {
					if cell.EvalID != e || cell.Configuration != c || cell.Model != mod {
						continue
					}
					g, ok := graded[cell.ID]
					if !ok {
						continue
					}
					epochs[e+"\x00"+c]++
					out.Runs = append(out.Runs, benchmarkRunOf(cell, g, epochs[e+"\x00"+c]))
				}
			}
		}
	}
	for _, n := range epochs {
		out.Metadata.RunsPerConfiguration = max(out.Metadata.RunsPerConfiguration, n)
	}

	var present []string
	pooled := map[string]benchmarkSummary{}
	for _, c := range configs {
		var rates, secs, toks []float64
		for _, cell := range m.Cells {
			if g, ok := graded[cell.ID]; ok && cell.Configuration == c {
				rates = append(rates, g.Summary.PassRate)
				secs = append(secs, float64(g.Run.DurationMs)/1000)
				toks = append(toks, float64(g.Run.Tokens))
			}
		}
		if len(rates) == 0 {
			continue
		}
		s := benchmarkSummary{PassRate: rounded(rates), TimeSeconds: rounded(secs), Tokens: rounded(toks)}
		pooled[c] = s
		present = append(present, c)
		out.RunSummary = append(out.RunSummary, member{c, s})
	}
	if len(present) >= 2 {
		a, b := pooled[present[0]], pooled[present[1]]
		out.RunSummary = append(out.RunSummary, member{"delta", benchmarkDelta{
			PassRate:    fmt.Sprintf("%+.2f", a.PassRate.Mean-b.PassRate.Mean),
			TimeSeconds: fmt.Sprintf("%+.1f", a.TimeSeconds.Mean-b.TimeSeconds.Mean),
			Tokens:      fmt.Sprintf("%+.0f", a.Tokens.Mean-b.Tokens.Mean),
		}})
	}
	if out.RunSummary == nil {
		out.RunSummary = orderedObject{}
	}
	out.Notes = benchmarkNotes(res, counts, models, present)

	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return nil, fmt.Errorf("benchmark.json: %w", err)
	}
	return scriptEnds.ReplaceAll(b.Bytes(), []byte("<\u2060$1")), nil
}

// scriptEnds are what would end or confuse a <script> element in HTML.
// skill-creator's generate_review.py puts benchmark.json into its page's
// script as json.dumps writes it, escaping neither "<" nor "/" (a \u003c
// written here is decoded before): a grader's evidence or an expectation
// holding "</script>" would end the script and run what follows in the
// reviewer's browser. A word joiner (U+2060, invisible) after the "<"
// keeps the text readable and the tag inert. In JSON text "<" occurs only
// inside strings, so the bytes can be rewritten as they are.
var scriptEnds = regexp.MustCompile(`(?i)<(/script|!--)`)

// benchmarkConfigs is the graded configurations in the viewer's order;
// trigger queries have no expectations and are in the notes instead.
func benchmarkConfigs(m record.EvalManifest) []string {
	var out []string
	all := orderedConfigs(m)
	for _, c := range configOrder {
		if slices.Contains(all, c) {
			out = append(out, c)
		}
	}
	for _, c := range all {
		if c != record.ConfigTrigger && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

func benchmarkRunOf(cell record.EvalCell, g *record.EvalGrading, runNumber int) benchmarkRun {
	r := benchmarkRun{
		EvalID:        evalIDValue(cell.EvalID),
		EvalName:      evalName(cell),
		Configuration: cell.Configuration,
		RunNumber:     runNumber,
		Result: benchmarkResult{
			PassRate:    g.Summary.PassRate,
			Passed:      g.Summary.Passed,
			Failed:      g.Summary.Total - g.Summary.Passed,
			Total:       g.Summary.Total,
			TimeSeconds: float64(g.Run.DurationMs) / 1000,
			Tokens:      g.Run.Tokens,
			Errors:      g.Run.Errors,
		},
		Expectations: []benchmarkExpectation{},
		Notes:        []string{fmt.Sprintf("model %s, epoch %d (cell %s)", cell.Model, cell.Epoch, cell.ID)},
	}
	for _, n := range g.Run.ToolCalls {
		r.Result.ToolCalls += n
	}
	for _, it := range g.Expectations {
		ev := it.Evidence
		if it.State() == record.GradeUngraded {
			ev = "ungraded (counted as not passed): " + ev
		}
		r.Expectations = append(r.Expectations, benchmarkExpectation{Text: it.Text, Passed: it.State() == record.GradePassed, Evidence: ev})
	}
	if g.Summary.Ungraded > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d of %d items ungraded, counted as not passed (failed here)", g.Summary.Ungraded, g.Summary.Total))
	}
	if g.Run.Status != runSucceeded {
		r.Notes = append(r.Notes, fmt.Sprintf("run %s (exit %d)", g.Run.Status, g.Run.ExitCode))
	}
	return r
}

func benchmarkNotes(res record.EvalResult, counts map[string]int, models, present []string) []string {
	notes := []string{}
	if len(models) > 1 {
		notes = append(notes, fmt.Sprintf("run_summary pools %d models (%s); each model's own numbers follow", len(models), strings.Join(models, ", ")))
	}
	for _, mod := range models {
		var parts []string
		for _, c := range present {
			if s := findSummary(res.Summaries, "", c, mod); s != nil {
				parts = append(parts, fmt.Sprintf("%s %s", c, statText(s.PassRate)))
			}
		}
		for _, d := range res.Deltas {
			if d.Model == mod {
				parts = append(parts, fmt.Sprintf("%s − %s %+.2f", d.Of, d.Minus, d.PassRate))
			}
		}
		if len(parts) > 0 {
			notes = append(notes, fmt.Sprintf("%s: pass rate %s", mod, strings.Join(parts, "; ")))
		}
	}
	for _, nd := range res.NonDiscriminating {
		verb := "passes"
		if nd.Always == record.GradeFailed {
			verb = "fails"
		}
		notes = append(notes, fmt.Sprintf("Assertion '%s' %s in every run of every configuration (eval %s) - may not differentiate skill value", nd.Text, verb, nd.EvalID))
	}
	ungraded := 0
	for _, s := range res.Summaries {
		ungraded += s.Ungraded
	}
	if ungraded > 0 {
		notes = append(notes, fmt.Sprintf("%d expectations ungraded, counted as not passed", ungraded))
	}
	if n := counts[CellNotRun]; n > 0 {
		notes = append(notes, fmt.Sprintf("%d cells not run (not in these numbers)", n))
	}
	if n := counts[CellRunFailed]; n > 0 {
		notes = append(notes, fmt.Sprintf("%d runs did not succeed (in these numbers, as graded)", n))
	}
	for _, t := range res.Triggers {
		notes = append(notes, fmt.Sprintf("Triggers on %s: precision %.2f, recall %.2f, accuracy %.2f (n=%d: %d true positives, %d false positives, %d true negatives, %d false negatives)",
			t.Model, t.Precision, t.Recall, t.Accuracy, t.N, t.TruePositives, t.FalsePositives, t.TrueNegatives, t.FalseNegatives))
	}
	if g := res.Gate; g != nil {
		if g.Met {
			notes = append(notes, "Gate met")
		}
		for _, m := range g.Missed {
			notes = append(notes, "Gate missed: "+m)
		}
	}
	return notes
}

// statText is a pass rate with its spread and n, as people read it.
func statText(s record.Stat) string {
	if s.N < 2 {
		return fmt.Sprintf("%.2f (n=%d, no interval)", s.Mean, s.N)
	}
	return fmt.Sprintf("%.2f ± %.2f [%.2f, %.2f] (n=%d)", s.Mean, s.Stddev, s.Low95, s.High95, s.N)
}

// rounded is skill-creator's calculate_stats: four decimals.
func rounded(xs []float64) benchmarkStat {
	s := Describe(xs, math.Inf(-1), math.Inf(1))
	r := func(f float64) float64 { return math.Round(f*1e4) / 1e4 }
	return benchmarkStat{Mean: r(s.Mean), Stddev: r(s.Stddev), Min: r(s.Min), Max: r(s.Max)}
}

// evalIDValue is skill-creator's integer id as a JSON number (the viewer
// sorts and matches runs by it), any other id as a string.
func evalIDValue(id string) any {
	if n, err := strconv.Atoi(id); err == nil && strconv.Itoa(n) == id {
		return n
	}
	return id
}

var plainID = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// viewerSafeID is an id for metadata.evals_run, which the viewer joins
// into its page as HTML without escaping it: an id that is not plain
// is written HTML-escaped, which the viewer then shows as written.
func viewerSafeID(id string) any {
	v := evalIDValue(id)
	if s, ok := v.(string); ok && !plainID.MatchString(s) {
		return html.EscapeString(s)
	}
	return v
}

func evalName(c record.EvalCell) string {
	if c.EvalName != "" {
		return c.EvalName
	}
	return "Eval " + c.EvalID
}
