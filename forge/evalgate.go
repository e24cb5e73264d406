package forge

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/harness-dev/harness/record"
)

// Where a draft's evals are, as harness eval reads a skill directory.
var evalFiles = []string{"evals/evals.json", "evals/evals.yaml"}

// DirDraftEval is the eval directory of a draft's attempt, beside the
// draft in the run directory.
const DirDraftEval = "eval"

// EvalDraft runs the evals of the draft in skillDir into evalDir (which
// it creates); label names the draft and attempt, the same in a recording
// and its replay. A result whose cells did not all finish is a result; an
// error means there is none.
type EvalDraft func(ctx context.Context, skillDir, evalDir, label string) (*record.EvalResult, error)

// shipsEvals reports whether a draft brings evals a gate can hold it to.
// Trigger queries alone measure the description, not what the skill
// does, and do not count.
func (d *Draft) shipsEvals() bool {
	for _, p := range evalFiles {
		if _, ok := d.Files[p]; ok {
			return true
		}
	}
	return false
}

// evalGate runs a draft's evals and holds them to the run's gate. It
// never fails the attempt: evals that cannot run leave the draft for a
// person, with the reason.
func (f *Forge) evalGate(ctx context.Context, skillDir, attemptDir, label string) *record.SkillEval {
	bound := *f.cfg.MinPassRate
	if f.cfg.EvalDraft == nil {
		return &record.SkillEval{MinPassRate: bound, Reason: "this run has no way to run a draft's evals, so it waits for a person"}
	}
	dir := filepath.Join(attemptDir, DirDraftEval)
	os.RemoveAll(dir) // a resumed run may have left a partial one
	res, err := f.cfg.EvalDraft(ctx, skillDir, dir, label)
	if err != nil || res == nil {
		if err == nil {
			err = fmt.Errorf("no result")
		}
		se := &record.SkillEval{MinPassRate: bound, Reason: fmt.Sprintf("its evals could not run (%v), so it waits for a person", err)}
		if _, serr := os.Stat(dir); serr == nil {
			se.Dir = dir
		}
		return se
	}
	return Judge(res, bound)
}

// epsilon absorbs the rounding of a mean of fractions, as the eval's own
// gate does, so that a bound met exactly is met.
const epsilon = 1e-9

// Judge holds an eval's result to a minimum pass rate of with_skill: met
// only when the eval finished and every with_skill summary (there is one:
// the run's model) has graded cells whose mean reaches it. Nothing
// measured is never a pass.
func Judge(res *record.EvalResult, bound float64) *record.SkillEval {
	se := &record.SkillEval{MinPassRate: bound, Status: res.Status, Dir: res.Dir}
	var with, without *record.EvalSummary
	for i, s := range res.Summaries {
		switch s.Configuration {
		case record.ConfigWithSkill:
			if with == nil || s.PassRate.Mean < with.PassRate.Mean {
				with = &res.Summaries[i]
			}
		case record.ConfigWithoutSkill:
			if without == nil || s.PassRate.Mean < without.PassRate.Mean {
				without = &res.Summaries[i]
			}
		}
	}
	if without != nil && without.PassRate.N > 0 {
		r := without.PassRate.Mean
		se.WithoutSkill = &r
	}
	if with == nil || with.PassRate.N == 0 {
		se.Reason = "no with_skill cell of its evals was graded, so it waits for a person"
		if res.Message != "" {
			se.Reason += ": " + res.Message
		}
		return se
	}
	r := with.PassRate.Mean
	se.PassRate, se.N = &r, with.PassRate.N
	switch {
	case res.Status == "incomplete": // eval.StatusIncomplete, which forge may not import
		se.Reason = fmt.Sprintf("its evals did not finish (with_skill %.2f over the %d cells graded), so it waits for a person: %s", r, se.N, res.Message)
	case r+epsilon < bound:
		se.Reason = fmt.Sprintf("with_skill's mean pass rate is %.2f (n=%d), below --forge-min-pass-rate %g, so it waits for a person", r, se.N, bound)
	default:
		se.Met = true
	}
	return se
}
