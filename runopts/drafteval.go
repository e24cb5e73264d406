package runopts

import (
	"context"

	"github.com/harness-dev/harness/record"
)

// DraftEval is what a run asks of its DraftEvaluator: run the evals a
// SkillForge draft ships, on the run's own model and endpoint.
type DraftEval struct {
	// SkillDir is the draft (its evals/ inside it); Dir is the eval
	// directory to create, which must not exist.
	SkillDir string
	Dir      string
	// MinPassRate is the run's gate, recorded in the eval's own result
	// too so that the eval directory says what was asked of it.
	MinPassRate float64
	// The run's model and how it is reached; the key is never written.
	Model, BaseURL, WireAPI, APIKey string
	// Sandbox is the run's --sandbox, for the cells' runs.
	Sandbox string
	// Record and Replay are the run's cassettes ("" = none): a draft's
	// evals record beside the run's and replay from there.
	Record, Replay string
	// Cassette names the draft's cells in those cassettes, the same in a
	// recording and its replay (the skill and attempt, not the run id).
	Cassette string
	RunKey   []byte
}

// DraftEvaluator runs a draft's evals and returns the eval's result (its
// Dir the eval directory). A result with missing cells is a result
// (status incomplete); an error means there is none.
type DraftEvaluator func(ctx context.Context, req DraftEval) (*record.EvalResult, error)
