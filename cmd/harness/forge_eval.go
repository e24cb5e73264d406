package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/harness-dev/harness/eval"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/pipeline"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/runopts"
	"github.com/harness-dev/harness/scorecard"
)

// A draft's evals are written by the model whose work they judge, and
// every cell is model calls the run's --max-tokens does not count: they
// are bounded here instead. 32 cells are 16 evals with and without the
// skill; a cell of a plain prompt needs a turn or two.
const (
	draftEvalMaxCells = 32
	draftEvalMaxTurns = 10
)

// draftEvaluator runs a SkillForge draft's evals for --forge-min-pass-rate
// as `harness eval DRAFT --epochs 1 --min-pass-rate X` would, on the run's
// model, endpoint, key and sandbox: with_skill and without_skill, one
// epoch, the cells with read tools only, no grader (expectations in words
// stay ungraded, so count as not passed: a draft meant to pass the gate
// says what it checks as checks), at most draftEvalMaxCells cells of
// draftEvalMaxTurns turns each. A run that records or replays a
// cassette records the cells into, or replays them from, the directory
// FILE.forge-evals/<skill>-attempt-N/ beside it.
func draftEvaluator(ctx context.Context, req runopts.DraftEval) (*record.EvalResult, error) {
	bound, turns := req.MinPassRate, draftEvalMaxTurns
	o := eval.Options{
		MaxCells:     draftEvalMaxCells,
		Suite:        eval.LoadOptions{Path: req.SkillDir},
		Epochs:       1,
		ArtifactsDir: filepath.Dir(req.Dir),
		ID:           filepath.Base(req.Dir),
		Settings:     pipeline.Layer{Settings: record.Settings{Model: req.Model, WireAPI: req.WireAPI, Sandbox: req.Sandbox, MaxTurns: &turns}},
		BaseURL:      req.BaseURL,
		Gate:         scorecard.GateOptions{MinPassRate: &bound},
		Common:       pipeline.Common{APIKey: req.APIKey, RunKey: req.RunKey, Version: version},
	}
	switch {
	case req.Replay != "":
		o.Replay = filepath.Join(absOrEmpty(req.Replay)+".forge-evals", req.Cassette)
	case req.Record != "":
		o.Record = filepath.Join(absOrEmpty(req.Record)+".forge-evals", req.Cassette)
		if err := os.MkdirAll(o.Record, 0o755); err != nil {
			return nil, fmt.Errorf("cassette directory for the draft's evals: %w", err)
		}
	}
	res, err := eval.Run(ctx, o)
	var oe *outcome.Error
	if res != nil && errors.As(err, &oe) && (oe.Code == "eval_gate_missed" || oe.Code == "eval_incomplete") {
		// The numbers are the answer: the forge holds them to the gate.
		return res, nil
	}
	return res, err
}
