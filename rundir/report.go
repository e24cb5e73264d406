package rundir

import (
	"path/filepath"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
)

// What the verifier tells a reader (harness verify, show, report, runs,
// approvals, the pipeline verifier): the same checks resume makes before it
// trusts a run directory, without running anything.

// Report is what `harness verify` found in a run directory.
type Report struct {
	RunID       string           `json:"runId"`
	RunDir      string           `json:"runDir"`
	Status      string           `json:"status"`
	OK          bool             `json:"ok"`
	Lines       int64            `json:"journalLines"`
	Head        artifacts.Digest `json:"journalHead,omitempty"`
	Sealed      bool             `json:"sealed"`
	SealChecked bool             `json:"sealChecked"`
	ToolOutputs int              `json:"toolOutputsChecked"`
	// ToolOutputsInJournal are outputs of a segment that never ended that
	// only the journal still holds (a power cut came before their files'
	// fsync); resume writes them again.
	ToolOutputsInJournal int             `json:"toolOutputsInJournalOnly,omitempty"`
	Problem              *outcome.Record `json:"problem,omitempty"`
	// Waiting are the calls that wait for a person's decision, from the
	// verified journal, in the order they were requested.
	Waiting []record.ApprovalRequested `json:"waiting,omitempty"`
	// Finished is the last run.finished event of the verified journal
	// (nil while the run never ended): how the run ended, and its result.
	Finished *record.RunFinished `json:"finished,omitempty"`
	// Turns and Usage are what the verified journal counts: for a run
	// that never ended (crashed, or still running) the only account of
	// what it spent, since run.json is written at each segment's end.
	Turns int                `json:"turns"`
	Usage record.UsageRecord `json:"usage"`
	// Activated are the skills the verified journal says were activated,
	// in order, and how (preloaded, or loaded by the model).
	Activated []record.Activation `json:"-"`
	// Calls are the tool calls the verified journal records, in order.
	Calls []loop.ToolStartedEvent `json:"-"`
	// lines are the verified journal's line digests, for HasLine.
	lines map[artifacts.Digest]bool
}

// HasLine reports whether d is the digest of a line of the verified
// journal (false when it did not verify).
func (r *Report) HasLine(d artifacts.Digest) bool { return r.lines[d] }

// Verify checks a run directory the way resume does before it trusts it
// (chain, seal, inputs and identity, segment ends, every referenced file),
// without running anything. The error is for a directory that is not a
// run directory at all; a tampered one is a report with OK false.
func Verify(dir string, key []byte) (*Report, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, outcome.Usage("run_dir_invalid", "%s: %v", dir, err)
	}
	m, err := ReadManifest(abs)
	if err != nil {
		return nil, err
	}
	rep := &Report{RunID: m.RunID, RunDir: abs, Status: m.Status, Sealed: m.Seal != nil, SealChecked: m.Seal != nil && len(key) > 0}
	st, err := Open(abs, m, key)
	if err == nil {
		err = st.checkFiles(abs)
	}
	if err != nil {
		e := outcome.As(err)
		rep.Problem = &outcome.Record{Code: e.Code, Message: e.Msg}
		return rep, nil
	}
	rep.OK, rep.Lines, rep.Head, rep.ToolOutputs, rep.lines = true, st.LastSeq, st.Head, len(st.Finished), st.lines
	rep.ToolOutputsInJournal = len(st.Restored)
	rep.Waiting = st.Waiting()
	rep.Finished = st.FinishedEvent
	rep.Turns = st.Progress.Turns
	rep.Activated = st.Activated
	rep.Calls = st.ToolOrder
	rep.Usage = record.UsageRecord{Total: st.Progress.Usage, Turns: st.Progress.TurnUsage}
	return rep, nil
}

// checkFiles holds the files resume reads back beyond the journal (the
// snapshot, the activations) to what the journal recorded of them.
func (st *State) checkFiles(dir string) error {
	if st.Snapshot == nil {
		return nil
	}
	if _, err := st.Registry(dir); err != nil {
		return err
	}
	if st.Started {
		_, err := st.Activations(dir)
		return err
	}
	return nil
}

// waiting are the calls requested and not decided, in request order.
func (st *State) Waiting() []record.ApprovalRequested {
	var out []record.ApprovalRequested
	for _, id := range st.ApprovalOrder {
		if _, done := st.ApprovalsDecided[id]; !done {
			out = append(out, st.ApprovalsRequested[id])
		}
	}
	return out
}
