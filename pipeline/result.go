package pipeline

import (
	"path/filepath"
	"strings"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
)

// result sums the phases up: the first phase in dependency order that did
// not succeed decides the status and exit code.
func (p *pipe) result(names []string) *record.PipelineResult {
	units := make([]record.PhaseOutcome, 0, len(names))
	for _, n := range names {
		units = append(units, p.done[n].outcome)
	}
	res := summarize(p.layout, p.manifest.Version, p.manifest.ID(), p.dir, units)
	res.DurationMs = clock(p.common.Now)().Sub(p.start).Milliseconds()
	return res
}

// summarize is the result of a pipeline or batch whose units ended as
// units (in dependency order), all but its duration: what the runner
// writes and what the verifier recomputes from the journal.
//
// version is the directory's (its manifest's): the result file is of the
// same version.
func summarize(l layout, version int, id, dir string, units []record.PhaseOutcome) *record.PipelineResult {
	res := &record.PipelineResult{
		Envelope: artifacts.NewEnvelope(l.resultType, version),
		Dir:      dir, Status: "succeeded",
	}
	res.SetID(l.kind, id)
	if l.kind == "batch" && version < 2 {
		res.PipelineID, res.BatchID = id, "" // version 1 named a batch's id so too
	}
	for _, o := range units {
		res.UsageByModel = record.MergeByModel(res.UsageByModel, o.UsageByModel)
		res.Usage.PromptTokens += o.Usage.PromptTokens
		res.Usage.CompletionTokens += o.Usage.CompletionTokens
		res.Usage.CachedTokens += o.Usage.CachedTokens
		res.Usage.ReasoningTokens += o.Usage.ReasoningTokens
		res.Usage.TotalTokens += o.Usage.TotalTokens
		res.Usage.Corrected = res.Usage.Corrected || o.Usage.Corrected
		if res.ExitCode == 0 && o.Status != "succeeded" && o.Status != statusSkipped {
			res.Status, res.ExitCode = o.Status, o.ExitCode
			if res.ExitCode == 0 {
				res.ExitCode = outcome.ExitFailed
			}
			prefix := l.unit + " " + o.Name + ": "
			res.Message = prefix + strings.TrimPrefix(o.Message, prefix)
		}
	}
	res.Cost, res.Unpriced = record.CostOf(res.UsageByModel)
	if l.kind == "batch" {
		res.Tasks = units
		res.Counts = map[string]int{}
		for _, u := range units {
			res.Counts[u.Status]++
		}
	} else {
		res.Phases = units
	}
	if res.ExitCode != 0 {
		res.Resumable = true
		res.ResumeCommand = "harness " + l.kind + " resume " + dir
	}
	return res
}

// resultWritten is the journal line that follows each write of the
// result file (<kind>.finished once every unit ended, <kind>.summarized
// before): the file's digest, under the journal's chain and seal, and
// what it was summed from, for the verifier to recompute it.
type resultWritten struct {
	Status       string           `json:"status"`
	ExitCode     int              `json:"exitCode"`
	ResultDigest artifacts.Digest `json:"resultDigest,omitempty"`
	// Order is the units in the order the result lists them.
	Order []string `json:"order,omitempty"`
	// Alone says a `--phase` process wrote it: each unit as the journal
	// last recorded it, not one execution's account.
	Alone bool `json:"alone,omitempty"`
}

// writeResult writes the result file and then the journal line that
// records it. A crash between the two leaves a file the journal does not
// vouch for; `harness pipeline resume` writes both again.
// The first error is the file's, the second the journal's.
func (p *pipe) writeResult(res *record.PipelineResult, names []string, alone bool) (fileErr, journalErr error) {
	d, err := p.redact().WriteJSONDigest(filepath.Join(p.dir, p.layout.result), res)
	if err != nil {
		return err, nil
	}
	typ := p.layout.finished()
	if alone && !allFinished(res) {
		typ = p.layout.summarized()
	}
	return nil, p.event(typ, resultWritten{Status: res.Status, ExitCode: res.ExitCode, ResultDigest: d, Order: names, Alone: alone})
}
