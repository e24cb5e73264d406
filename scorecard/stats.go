package scorecard

import (
	"math"
	"slices"
	"strings"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/record"
)

// Cell states counted in EvalResult.Cells. A graded cell is also counted
// as run_failed when its run did not succeed: its pass rate is still in
// the numbers (a run that failed is a result, not a gap).
const (
	CellGraded    = "graded"
	CellNotRun    = "not_run"
	CellRunFailed = "run_failed"
	// CellUnknown counts gradings that name no cell of the manifest: they
	// are left out of every number.
	CellUnknown = "unknown"
)

// runSucceeded is the status of a run that ended as asked.
const runSucceeded = "succeeded"

// Summarize puts a list of gradings into numbers. A grading is matched to
// its cell by id and the manifest's cell is used (configuration, model,
// eval, label), never the grading's own copy. Each cell counts once: its
// pass rate is its grading's summary (ungraded items counted as not
// passed and counted apart), its seconds the run's duration, its tokens
// the run's. Status and ExitCode are left to the caller and ApplyGate.
func Summarize(m record.EvalManifest, gradings []record.EvalGrading) record.EvalResult {
	res := record.EvalResult{
		Envelope: artifacts.NewEnvelope(record.TypeEvalResult, record.EvalVersion),
		EvalID:   m.EvalID,
		Skill:    m.Skill,
		Cells:    map[string]int{},
	}
	graded := matchGradings(m, gradings, res.Cells)

	configs := orderedConfigs(m)
	models := orderedModels(m)
	evals := orderedEvals(m)

	// Every configuration × model with a cell in the manifest gets a
	// summary, graded or not: n = 0 says "nothing to measure here".
	for _, c := range configs {
		if c == record.ConfigTrigger {
			continue
		}
		for _, mod := range models {
			if s, ok := summarize(m, graded, "", c, mod); ok {
				res.Summaries = append(res.Summaries, s)
			}
		}
	}
	for _, e := range evals {
		for _, c := range configs {
			if c == record.ConfigTrigger {
				continue
			}
			for _, mod := range models {
				if s, ok := summarize(m, graded, e, c, mod); ok {
					res.PerEval = append(res.PerEval, s)
				}
			}
		}
	}
	res.Deltas = deltas(res.Summaries, models)
	res.NonDiscriminating = nonDiscriminating(m, graded, evals)
	res.Triggers = triggers(m, graded, models)
	res.Usage, res.GraderUsage, res.CostUSD = usage(m, graded)
	return res
}

// matchGradings maps cell id to its grading, counting cells by state.
func matchGradings(m record.EvalManifest, gradings []record.EvalGrading, counts map[string]int) map[string]*record.EvalGrading {
	known := make(map[string]bool, len(m.Cells))
	for _, c := range m.Cells {
		known[c.ID] = true
	}
	graded := map[string]*record.EvalGrading{}
	for i := range gradings {
		g := &gradings[i]
		if !known[g.Cell.ID] {
			counts[CellUnknown]++
			continue
		}
		// A second grading for a cell is not a second sample.
		if _, dup := graded[g.Cell.ID]; !dup {
			graded[g.Cell.ID] = g
		}
	}
	for _, c := range m.Cells {
		g, ok := graded[c.ID]
		if !ok {
			counts[CellNotRun]++
			continue
		}
		counts[CellGraded]++
		if g.Run.Status != runSucceeded {
			counts[CellRunFailed]++
		}
	}
	return graded
}

// orderedConfigs is the manifest's configurations, then any a cell names
// that the manifest's list does not, in the order cells name them.
func orderedConfigs(m record.EvalManifest) []string {
	return listedThenNamed(m.Configurations, m.Cells, func(c record.EvalCell) string { return c.Configuration })
}

// orderedModels is orderedConfigs for models.
func orderedModels(m record.EvalManifest) []string {
	return listedThenNamed(m.Models, m.Cells, func(c record.EvalCell) string { return c.Model })
}

func listedThenNamed(listed []string, cells []record.EvalCell, name func(record.EvalCell) string) []string {
	out := slices.Clone(listed)
	for _, c := range cells {
		if n := name(c); !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// orderedEvals is the evals (not trigger queries) in the order their
// first cell appears.
func orderedEvals(m record.EvalManifest) []string {
	var out []string
	for _, c := range m.Cells {
		if c.Configuration != record.ConfigTrigger && !slices.Contains(out, c.EvalID) {
			out = append(out, c.EvalID)
		}
	}
	return out
}

// summarize is one configuration on one model, over one eval when evalID
// is set; ok is false when the manifest has no such cell.
func summarize(m record.EvalManifest, graded map[string]*record.EvalGrading, evalID, config, model string) (record.EvalSummary, bool) {
	s := record.EvalSummary{EvalID: evalID, Configuration: config, Model: model}
	var rates, secs, toks, costs []float64
	seen, allCost := false, true
	for _, c := range m.Cells {
		if c.Configuration != config || c.Model != model || evalID != "" && c.EvalID != evalID {
			continue
		}
		seen = true
		g, ok := graded[c.ID]
		if !ok {
			continue
		}
		rates = append(rates, g.Summary.PassRate)
		secs = append(secs, float64(g.Run.DurationMs)/1000)
		toks = append(toks, float64(g.Run.Tokens))
		if g.Run.CostUSD != nil {
			costs = append(costs, *g.Run.CostUSD)
		} else {
			allCost = false
		}
		s.Ungraded += g.Summary.Ungraded
		if g.Run.Status != runSucceeded {
			s.RunFailed++
		}
	}
	if !seen {
		return s, false
	}
	s.PassRate = Describe(rates, 0, 1)
	s.Seconds = Describe(secs, 0, math.Inf(1))
	s.Tokens = Describe(toks, 0, math.Inf(1))
	// A mean over the cells that happen to carry a cost would be a mean
	// of a different sample: the cost is shown only when every one does.
	if allCost && len(costs) > 0 {
		c := Describe(costs, 0, math.Inf(1))
		s.CostUSD = &c
	}
	return s, true
}

// Describe is a sample's n, mean, sample standard deviation (n−1; 0 when
// n < 2), range and a 95% interval of the mean from Student's t, kept
// within [lo, hi] (a pass rate's interval cannot leave [0, 1]). With
// fewer than two values there is no spread to estimate: the interval is
// the mean itself, and n says so.
func Describe(xs []float64, lo, hi float64) record.Stat {
	st := record.Stat{N: len(xs)}
	if len(xs) == 0 {
		return st
	}
	st.Min, st.Max = xs[0], xs[0]
	var sum float64
	for _, x := range xs {
		sum += x
		st.Min = min(st.Min, x)
		st.Max = max(st.Max, x)
	}
	st.Mean = sum / float64(len(xs))
	st.Low95, st.High95 = st.Mean, st.Mean
	if len(xs) < 2 {
		return st
	}
	var ss float64
	for _, x := range xs {
		ss += (x - st.Mean) * (x - st.Mean)
	}
	st.Stddev = math.Sqrt(ss / float64(len(xs)-1))
	half := tQuantile975(len(xs)-1) * st.Stddev / math.Sqrt(float64(len(xs)))
	st.Low95 = max(lo, st.Mean-half)
	st.High95 = min(hi, st.Mean+half)
	return st
}

// t975 is Student's t 0.975 quantile (a two-sided 95% interval) for 1 to
// 30 degrees of freedom.
var t975 = [...]float64{
	12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
	2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
	2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
}

// tQuantile975 is the quantile for df degrees of freedom. Between the
// tabulated points it takes the value at the tabulated df just below,
// which is the larger quantile: an interval is never narrower than the
// exact one.
func tQuantile975(df int) float64 {
	switch {
	case df < 1:
		return math.NaN()
	case df <= 30:
		return t975[df-1]
	case df < 40:
		return 2.042
	case df < 60:
		return 2.021
	case df < 120:
		return 2.000
	case df < 1000:
		return 1.980
	default:
		return 1.960
	}
}

// deltas are with_skill minus without_skill and minus old_skill per
// model, where both were graded.
func deltas(sums []record.EvalSummary, models []string) []record.EvalDelta {
	find := func(config, model string) *record.EvalSummary {
		for i := range sums {
			if sums[i].Configuration == config && sums[i].Model == model && sums[i].PassRate.N > 0 {
				return &sums[i]
			}
		}
		return nil
	}
	var out []record.EvalDelta
	for _, mod := range models {
		of := find(record.ConfigWithSkill, mod)
		if of == nil {
			continue
		}
		for _, minus := range []string{record.ConfigWithoutSkill, record.ConfigOldSkill} {
			b := find(minus, mod)
			if b == nil {
				continue
			}
			out = append(out, record.EvalDelta{
				Model: mod, Of: of.Configuration, Minus: minus,
				PassRate: of.PassRate.Mean - b.PassRate.Mean,
				Seconds:  of.Seconds.Mean - b.Seconds.Mean,
				Tokens:   of.Tokens.Mean - b.Tokens.Mean,
			})
		}
	}
	return out
}

// nonDiscriminating finds, per eval, the items (expectations and checks,
// by text) decided the same way in every graded cell of every
// configuration and model. It says nothing unless at least two
// configurations were graded: with one there is nothing to tell apart.
// An item ungraded anywhere, or missing from some graded cell, is not
// flagged: its outcome is not known everywhere.
func nonDiscriminating(m record.EvalManifest, graded map[string]*record.EvalGrading, evals []string) []record.NonDiscriminating {
	var out []record.NonDiscriminating
	for _, e := range evals {
		var cells []*record.EvalGrading
		configs := map[string]bool{}
		for _, c := range m.Cells {
			if c.EvalID != e || c.Configuration == record.ConfigTrigger {
				continue
			}
			if g, ok := graded[c.ID]; ok {
				cells = append(cells, g)
				configs[c.Configuration] = true
			}
		}
		if len(configs) < 2 {
			continue
		}
		var texts []string
		for _, g := range cells {
			for _, it := range g.Expectations {
				if !slices.Contains(texts, it.Text) {
					texts = append(texts, it.Text)
				}
			}
		}
		for _, text := range texts {
			if always, ok := sameEverywhere(cells, text); ok {
				out = append(out, record.NonDiscriminating{EvalID: e, Text: text, Always: always})
			}
		}
	}
	return out
}

func sameEverywhere(cells []*record.EvalGrading, text string) (string, bool) {
	always := ""
	for _, g := range cells {
		i := slices.IndexFunc(g.Expectations, func(it record.GradedItem) bool { return it.Text == text })
		if i < 0 {
			return "", false
		}
		st := g.Expectations[i].State()
		if st == record.GradeUngraded || always != "" && st != always {
			return "", false
		}
		always = st
	}
	return always, always != ""
}

// triggers is, per model, how the trigger queries came out. A query the
// grading did not decide (no Triggered) counts as a wrong answer, like
// an ungraded expectation counts as not passed: a false negative when it
// should have triggered, a false positive when it should not. A ratio
// with nothing to count is defined as 1: precision when the skill was
// never reached for (no false alarm was raised), recall when no query
// should have triggered (none was missed). The four counts are beside
// them, so a vacuous 1 is visible as such.
func triggers(m record.EvalManifest, graded map[string]*record.EvalGrading, models []string) []record.TriggerSummary {
	var out []record.TriggerSummary
	for _, mod := range models {
		ts := record.TriggerSummary{Model: mod}
		seen := false
		for _, c := range m.Cells {
			if c.Configuration != record.ConfigTrigger || c.Model != mod || c.ShouldTrigger == nil {
				continue
			}
			seen = true
			g, ok := graded[c.ID]
			if !ok {
				continue
			}
			ts.N++
			should := *c.ShouldTrigger
			switch {
			case g.Triggered == nil && should, g.Triggered != nil && !*g.Triggered && should:
				ts.FalseNegatives++
			case g.Triggered == nil && !should, g.Triggered != nil && *g.Triggered && !should:
				ts.FalsePositives++
			case should:
				ts.TruePositives++
			default:
				ts.TrueNegatives++
			}
		}
		if !seen {
			continue
		}
		ts.Precision = ratio(ts.TruePositives, ts.TruePositives+ts.FalsePositives, 1)
		ts.Recall = ratio(ts.TruePositives, ts.TruePositives+ts.FalseNegatives, 1)
		ts.Accuracy = ratio(ts.TruePositives+ts.TrueNegatives, ts.N, 0)
		out = append(out, ts)
	}
	return out
}

func ratio(num, den int, empty float64) float64 {
	if den == 0 {
		return empty
	}
	return float64(num) / float64(den)
}

// usage sums the graded cells' runs and graders. A run's grading carries
// only its total tokens, so Usage has only TotalTokens. The cost is the
// runs' total, given only when every graded run has one.
func usage(m record.EvalManifest, graded map[string]*record.EvalGrading) (runs, graders record.ResultUsage, cost *float64) {
	var total float64
	allCost, nGraders, missing := true, 0, 0
	for _, c := range m.Cells {
		g, ok := graded[c.ID]
		if !ok {
			continue
		}
		runs.TotalTokens += g.Run.Tokens
		if g.Run.CostUSD != nil {
			total += *g.Run.CostUSD
		} else {
			allCost = false
		}
		if strings.TrimSpace(g.Grader) == "" {
			continue
		}
		nGraders++
		if g.GraderUsage == nil {
			missing++
			continue
		}
		u := g.GraderUsage
		graders.PromptTokens += u.PromptTokens
		graders.CompletionTokens += u.CompletionTokens
		graders.CachedTokens += u.CachedTokens
		graders.ReasoningTokens += u.ReasoningTokens
		graders.TotalTokens += u.TotalTokens
		graders.Corrected = graders.Corrected || u.Corrected
	}
	switch {
	case nGraders == 0:
		graders.UsageSource = "none"
	case missing > 0:
		graders.UsageSource = "missing"
	default:
		graders.UsageSource = "provider"
	}
	if allCost && len(graded) > 0 {
		cost = &total
	}
	return runs, graders, cost
}
