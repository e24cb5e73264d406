package run

import (
	"errors"
	"os"
	"slices"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/runresult"
)

// finish writes the final manifest and the run.finished event. It is the
// single place a run's status and exit code are decided.
func (r *runner) finish(o *loop.Outcome, runErr error) (*Result, error) {
	if runErr == nil && r.journalErr != nil {
		runErr = &outcome.Error{Code: "journal_write_failed", Msg: "an event could not be journaled: " + r.journalErr.Error(), Exit: outcome.ExitFailed, Err: r.journalErr}
	}
	exit := outcome.ExitCode(runErr)
	status, resumable := outcome.Status(exit)
	var rec *outcome.Record
	if runErr != nil {
		e := outcome.As(runErr)
		// A provider's message can echo the key: what is recorded and
		// what the CLI prints are redacted.
		msg := r.redact.String(e.Error())
		rec = &outcome.Record{Code: e.Code, Message: msg}
		e = &outcome.Error{Code: e.Code, Msg: msg, Exit: e.Exit, Reported: e.Reported}
		if status == outcome.StatusRefused {
			resumable = r.driftRefused
		}
		runErr = e
	}
	m := &r.manifest
	m.Status, m.ExitCode, m.Resumable, m.Error = status, exit, resumable, rec
	if o != nil || rec != nil {
		// One vocabulary for why a run ended: result.json's, everywhere.
		m.Reason = runresult.Reason(o, rec)
	}
	if o != nil {
		m.Turns = o.Turns
		m.Usage = record.UsageRecord{Total: o.Usage, Turns: o.TurnUsage}
		if m.Usage.Turns == nil {
			m.Usage.Turns = []loop.Usage{}
		}
		if o.Final.Content != "" || o.Reason == loop.ReasonCompleted {
			m.Final = &record.FinalMessage{Content: r.redact.String(o.Final.Content)}
		}
	}
	var werrs []error
	fin := r.now().UTC()
	m.FinishedAt = &fin
	seg := record.Segment{Segment: r.segment, StartedAt: r.segStart, FinishedAt: &fin, Status: status, ExitCode: exit, Reason: m.Reason, Limits: record.LimitsOf(r.limits)}
	if o != nil {
		seg.Turns = o.Turns - r.start.Turns
		seg.Usage = loop.Usage{
			PromptTokens:     o.Usage.PromptTokens - r.start.Usage.PromptTokens,
			CompletionTokens: o.Usage.CompletionTokens - r.start.Usage.CompletionTokens,
			CachedTokens:     o.Usage.CachedTokens - r.start.Usage.CachedTokens,
			TotalTokens:      o.Usage.TotalTokens - r.start.Usage.TotalTokens,
		}
	}
	m.Segments = append(m.Segments, seg)
	ended := runresult.Run{ID: r.res.runID, Dir: r.res.runDir, Model: r.opts.Model, WireAPI: r.opts.Wire(), FallbackUsed: r.fellBack,
		Pending: r.pendingApprovals, Segments: m.Segments, Redact: r.redact, PrevAnswer: r.prevAnswer, Prices: r.opts.Prices, Schema: r.schema, Limits: r.limits}
	if r.gate != nil {
		ended.Decisions = r.gate.Trace().Decisions
	}
	result := ended.Result(o, status, exit, resumable, rec)
	if err := r.redact.WriteJSON(r.path(record.FileResult), result); err != nil {
		werrs = append(werrs, err)
	}
	m.Artifacts = append(m.Artifacts, record.FileResult)
	m.Artifacts = append(m.Artifacts, record.DirToolOutputs+"/")
	if r.gate != nil {
		werrs = append(werrs, r.writePolicySnapshot(), r.writeTrace())
	}
	for _, f := range []string{record.FileResourceReads, record.FileScriptExecutions, record.FilePolicySnapshot, record.FilePolicyTrace} {
		if _, err := os.Stat(r.path(f)); err == nil {
			m.Artifacts = append(m.Artifacts, f)
		}
	}
	slices.Sort(m.Artifacts)
	m.Artifacts = slices.Compact(m.Artifacts)
	_, jerr := r.journal.Append(record.EventRunFinished, record.RunFinished{Segment: r.segment, Status: status, ExitCode: exit, Reason: m.Reason, Resumable: resumable, Error: rec, Result: result, PolicySnapshot: r.policyDigestIfGated()})
	m.JournalHead = r.journal.Head()
	werrs = append(werrs, jerr, r.writeManifest())
	res := &Result{RunID: r.res.runID, RunDir: r.res.runDir, Status: status, ExitCode: exit, Record: result, Outputs: r.opts.Outputs, Workspace: r.res.workspace}
	if m.Final != nil {
		res.Final = m.Final.Content
	}
	if err := errors.Join(werrs...); err != nil && runErr == nil {
		return res, &outcome.Error{Code: "artifact_write_failed", Msg: err.Error(), Exit: outcome.ExitFailed, Err: err}
	}
	return res, runErr
}

// policyDigestIfGated is the policy snapshot's digest when the run wrote
// one at its end.
func (r *runner) policyDigestIfGated() artifacts.Digest {
	if r.gate == nil {
		return ""
	}
	return r.policyDigest
}
