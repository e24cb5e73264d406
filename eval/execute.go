package eval

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/grader"
	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/pipeline"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/scorecard"
)

// Statuses of a cell's run that are data: the run ended by itself, and
// what it did is graded. Others (provider_error, interrupted,
// awaiting_approval) leave the cell to a resume.
var gradable = []string{"succeeded", "failed", "limit", "refused"}

// maxGraderFile bounds a workspace file the grader is shown.
const maxGraderFile = 256 << 10

// execute runs (or resumes) the cells' batch, grades every cell that
// ended and was not graded yet, and writes the result.
func (e *evalRun) execute(ctx context.Context, resume bool) (*record.EvalResult, error) {
	shard := e.manifest.Shard
	var runErr error
	var res *record.PipelineResult
	watch := &workspaceWatch{e: e, seen: map[string]artifacts.Digest{}}
	common := e.opts.Common
	tee := common.OnEvent
	common.OnEvent = func(line []byte) {
		watch.onBatchLine(line)
		if tee != nil {
			tee(line)
		}
	}
	if resume {
		res, runErr = pipeline.Resume(ctx, pipeline.ResumeOptions{Dir: e.batchDir(), BaseURL: e.opts.BaseURL, Settings: e.opts.Settings, Common: common})
	} else {
		res, runErr = pipeline.RunBatch(ctx, pipeline.BatchOptions{Options: pipeline.Options{
			File: filepath.Join(e.dir, record.FileEvalBatch), ID: record.DirEvalBatch, ArtifactsDir: e.dir, Jobs: e.opts.Jobs,
			BaseURL: e.opts.BaseURL, Settings: e.opts.Settings, Record: e.opts.Record, Replay: e.opts.Replay, Common: common,
		}, Shard: shard})
	}
	if watch.err != nil {
		return nil, watch.err
	}
	if e.ended == nil {
		e.ended = map[string]artifacts.Digest{}
	}
	for c, d := range watch.seen {
		e.ended[c] = d
	}
	if res == nil {
		return nil, runErr
	}
	v, err := pipeline.Verify(e.batchDir(), e.opts.Common.RunKey)
	if err != nil {
		return nil, err
	}
	units := map[string]pipeline.UnitVerification{}
	for _, u := range v.Units {
		units[u.Name] = u
	}
	for id, was := range e.gradedRun {
		if u := units[id]; u.Run == nil || u.Run.RunID != was[0] || string(u.Run.Head) != was[1] {
			// The batch ran the cell again (a resume): grade it again.
			delete(e.graded, id)
		}
	}
	counts := map[string]int{}
	var written []gradedCell
	var graderErr error
	var tampered []string
	for _, c := range e.manifest.Cells {
		if _, done := e.graded[c.ID]; done {
			counts["graded"]++
			continue
		}
		u, ok := units[c.ID]
		switch {
		case !ok:
			// Another shard's cell.
			continue
		case !u.OK && u.Run != nil && u.Run.Problem != nil:
			tampered = append(tampered, fmt.Sprintf("%s: %s", c.ID, u.Problem))
			counts["tampered"]++
			continue
		case u.Run == nil || u.Run.Finished == nil || u.Run.Finished.Result == nil || !slices.Contains(gradable, u.Run.Finished.Status):
			counts["not_run"]++
			continue
		}
		// The workspace its checks and the grader read is the one its
		// run left: held to the digest journaled as the run ended.
		want, vouched := e.ended[c.ID]
		if !vouched || want == "" {
			// harness stopped between the run's end and the record of its
			// workspace: not tampering, but nothing vouches for it.
			counts["unvouched"]++
			continue
		}
		if now, err := treeDigest(filepath.Join(e.dir, record.DirEvalCells, c.ID)); err != nil || now != want {
			tampered = append(tampered, fmt.Sprintf("%s: its workspace changed after its run ended", c.ID))
			counts["tampered"]++
			continue
		}
		g, gerr := e.grade(ctx, c, u)
		if gerr != nil {
			var ge *grader.Error
			if !errors.As(gerr, &ge) {
				return nil, gerr
			}
			graderErr = gerr
			counts["grader_failed"]++
			continue
		}
		if err := os.MkdirAll(filepath.Join(e.dir, record.DirEvalGrading), 0o755); err != nil {
			return nil, err
		}
		// Written now, made durable together below: a grading's journal
		// line is never on disk before its file.
		data, err := e.redact().EncodeJSON(g)
		if err != nil {
			return nil, err
		}
		path := filepath.Join(e.dir, record.DirEvalGrading, c.ID+".json")
		if err := artifacts.WriteUnsynced(path, 0o644, data); err != nil {
			return nil, err
		}
		written = append(written, gradedCell{path: path, cell: c.ID, digest: artifacts.DigestBytes(data), run: [2]string{g.Run.RunID, string(g.Run.Head)}})
		counts["graded"]++
	}
	// One round of fsyncs for every grading and one for the journal,
	// where each cell cost three: what the eval adds to a batch's cells.
	if err := e.recordGraded(written); err != nil {
		return nil, err
	}
	return e.finish(counts, tampered, runErr, graderErr)
}

func (e *evalRun) batchDir() string {
	return filepath.Join(e.dir, batchName(e.manifest.Shard))
}

// grade grades one cell from its verified run.
func (e *evalRun) grade(ctx context.Context, c record.EvalCell, u pipeline.UnitVerification) (*record.EvalGrading, error) {
	rep := u.Run
	r := rep.Finished.Result
	run := record.EvalRun{RunDir: rel(e.dir, rep.RunDir), RunID: rep.RunID, Status: r.Status, ExitCode: r.ExitCode, Turns: r.Turns,
		Tokens: r.Usage.TotalTokens, CostUSD: r.Cost, DurationMs: r.DurationMs, ToolCalls: r.ToolCalls, Answer: r.Answer, Head: rep.Head}
	for _, a := range rep.Activated {
		if !slices.Contains(run.Loaded, a.Name) {
			run.Loaded = append(run.Loaded, a.Name)
		}
	}
	if r.Status != "succeeded" {
		run.Errors = 1
	}
	g := &record.EvalGrading{Envelope: artifacts.NewEnvelope(record.TypeEvalGrading, record.EvalVersion), Cell: c, Run: run}
	ws := filepath.Join(e.dir, record.DirEvalCells, c.ID)
	if c.Configuration == record.ConfigTrigger {
		triggered := slices.Contains(run.Loaded, e.manifest.Skill)
		g.Triggered = &triggered
		it := record.GradedItem{Kind: "trigger", Passed: triggered == *c.ShouldTrigger}
		if *c.ShouldTrigger {
			it.Text = "the model loads " + e.manifest.Skill
		} else {
			it.Text = "the model does not load " + e.manifest.Skill
		}
		it.Evidence = "skills loaded: " + orNone(run.Loaded)
		it.Status = record.GradeFailed
		if it.Passed {
			it.Status = record.GradePassed
		}
		g.Expectations = []record.GradedItem{it}
		g.Summary = countItems(g.Expectations)
		return g, nil
	}
	ev := e.suite.eval(c.EvalID)
	if ev == nil {
		return nil, fmt.Errorf("cell %s names eval %s, which the eval file no longer has", c.ID, c.EvalID)
	}
	view := cellView{run: run, workspace: ws, cellID: c.ID}
	env := e.opts.Commands
	if env != nil {
		env.RecordDir = filepath.Join(e.dir, record.DirEvalGrading, "commands", c.ID)
	}
	for _, ch := range ev.Checks {
		g.Expectations = append(g.Expectations, runCheck(ctx, ch, view, env))
	}
	if len(ev.Expectations) > 0 {
		items, usage, err := e.gradeWords(ctx, c, ev, run, rep.Calls, ws)
		if err != nil {
			return nil, err
		}
		g.Expectations = append(g.Expectations, items...)
		if usage != nil {
			g.Grader, g.PromptDigest = e.manifest.GraderModel, e.manifest.GraderPromptDigest
			g.GraderUsage = usage
		}
	}
	g.Summary = countItems(g.Expectations)
	return g, nil
}

// gradeWords asks the grader about an eval's expectations; without a
// grader they stay ungraded, and say how to grade them.
func (e *evalRun) gradeWords(ctx context.Context, c record.EvalCell, ev *Eval, run record.EvalRun, calls []loop.ToolStartedEvent, ws string) ([]record.GradedItem, *record.ResultUsage, error) {
	if e.opts.Grader == nil {
		var out []record.GradedItem
		for _, x := range ev.Expectations {
			out = append(out, record.GradedItem{Text: x, Kind: "expectation", Status: record.GradeUngraded,
				Evidence: "not graded: expectations in words need a grader model (--grader-model)"})
		}
		return out, nil, nil
	}
	gr, err := e.opts.Grader.ForCell(c.ID)
	if err != nil {
		return nil, nil, err
	}
	in := grader.Input{Task: ev.Prompt, ExpectedOutput: ev.ExpectedOutput, Answer: run.Answer, Expectations: ev.Expectations, Files: map[string][]byte{}}
	for _, call := range calls {
		in.ToolCalls = append(in.ToolCalls, grader.ToolCall{Tool: call.Tool, Arguments: call.Arguments})
	}
	names := slices.Clone(ev.Files)
	for _, ch := range ev.Checks {
		if ch.File != "" {
			names = append(names, ch.File)
		}
	}
	for _, n := range names {
		data, err := readBeneath(ws, n)
		if err != nil {
			in.Files[filepath.ToSlash(n)] = nil
			continue
		}
		if len(data) > maxGraderFile {
			data = data[:maxGraderFile]
		}
		in.Files[filepath.ToSlash(n)] = data
	}
	items, usage, err := gr.Grade(ctx, in)
	if err != nil {
		return nil, nil, err
	}
	for i := range items {
		items[i].Kind = "expectation"
	}
	u := record.ResultUsage{PromptTokens: usage.PromptTokens, CompletionTokens: usage.CompletionTokens, CachedTokens: usage.CachedTokens,
		ReasoningTokens: usage.ReasoningTokens, TotalTokens: usage.TotalTokens, UsageSource: "provider"}
	return items, &u, nil
}

func countItems(items []record.GradedItem) record.GradingSummary {
	var s record.GradingSummary
	for _, it := range items {
		switch it.Status {
		case record.GradePassed:
			s.Passed++
		case record.GradeUngraded:
			s.Ungraded++
		default:
			s.Failed++
		}
	}
	s.Total = len(items)
	if s.Total > 0 {
		s.PassRate = float64(s.Passed) / float64(s.Total)
	}
	return s
}

func rel(base, p string) string {
	if r, err := filepath.Rel(base, p); err == nil && filepath.IsLocal(r) {
		return filepath.ToSlash(r)
	}
	return p
}

// finish reads back every grading (each held to the digest its journal
// line gives), computes the numbers, applies the gate and writes the
// result files.
func (e *evalRun) finish(counts map[string]int, tampered []string, runErr, graderErr error) (*record.EvalResult, error) {
	var gradings []record.EvalGrading
	for _, c := range e.manifest.Cells {
		d, ok := e.graded[c.ID]
		if !ok {
			continue
		}
		var g record.EvalGrading
		if err := readDigested(e.dir, filepath.Join(record.DirEvalGrading, c.ID+".json"), d, record.TypeEvalGrading, &g); err != nil {
			return nil, err
		}
		gradings = append(gradings, g)
	}
	res := scorecard.Summarize(e.manifest, gradings)
	res.Envelope = artifacts.NewEnvelope(record.TypeEvalResult, record.EvalVersion)
	res.EvalID, res.Skill, res.Dir = e.manifest.EvalID, e.manifest.Skill, e.dir
	res.Cells = counts
	incomplete := counts["not_run"]+counts["grader_failed"]+counts["unvouched"] > 0
	var previous *record.EvalResult
	if f := e.opts.Gate.NoRegressionFrom; f != "" {
		p, err := ReadResult(f, e.opts.Common.RunKey, e.manifest)
		if err != nil {
			return nil, err
		}
		previous = p
	}
	res.Status, res.ExitCode = scorecard.StatusPassed, 0
	if incomplete {
		res.Status, res.ExitCode, res.Resumable = scorecard.StatusIncomplete, 4, true
		res.ResumeCommand = "harness eval resume " + e.dir
		switch {
		case counts["unvouched"] > 0:
			res.Message = fmt.Sprintf("%d cells ended while harness was stopping, before their workspaces were recorded: nothing vouches for what they hold, so they are not graded; start the eval again for numbers over every cell", counts["unvouched"])
			res.Resumable, res.ResumeCommand = false, ""
		case graderErr != nil:
			res.Message = fmt.Sprintf("%d cells are not graded: %v (`%s`)", counts["grader_failed"], graderErr, res.ResumeCommand)
		case runErr != nil:
			res.Message = fmt.Sprintf("%d cells did not run to their end (%v): resume with `%s`", counts["not_run"], runErr, res.ResumeCommand)
			res.ExitCode = outcome.ExitCode(runErr)
		default:
			res.Message = fmt.Sprintf("%d cells did not run to their end: resume with `%s`", counts["not_run"], res.ResumeCommand)
		}
	}
	// A cell whose run directory or workspace does not verify is refused,
	// and the refusal is the result the eval records.
	var refusal error
	if len(tampered) > 0 {
		refusal = outcome.Policy("eval_cell_tampered", "these cells are not graded, because what they left does not verify: %s", strings.Join(tampered, "; "))
		res.Status, res.ExitCode, res.Resumable, res.ResumeCommand = scorecard.StatusIncomplete, outcome.ExitPolicy, false, ""
		res.Message = refusal.Error()
	}
	scorecard.ApplyGate(&res, e.opts.Gate, previous)
	if err := e.writeResults(&res, gradings); err != nil {
		return nil, err
	}
	d, err := e.redact().WriteJSONDigest(filepath.Join(e.dir, record.FileEvalResult), &res)
	if err != nil {
		return nil, err
	}
	if _, err := e.journal.Append(record.EventEvalFinished, map[string]any{"resultDigest": d, "status": res.Status, "exitCode": res.ExitCode}); err != nil {
		return nil, err
	}
	if refusal != nil {
		return &res, refusal
	}
	return &res, gateError(&res)
}

// readDigested reads a file beneath dir and holds it to the digest the
// journal recorded before decoding it as its type.
func readDigested(dir, name string, want artifacts.Digest, typ string, v any) error {
	data, err := artifacts.ReadBeneath(dir, name)
	if err != nil {
		return outcome.Policy("eval_dir_tampered", "%s: %v", name, err)
	}
	if artifacts.DigestBytes(data) != want {
		return outcome.Policy("eval_dir_tampered", "%s is not the file the eval journal recorded", name)
	}
	return artifacts.DecodeArtifact(data, typ, record.EvalVersion, v)
}

// writeResults writes the files people and other tools read beside
// eval-result.json.
func (e *evalRun) writeResults(res *record.EvalResult, gradings []record.EvalGrading) error {
	b, err := scorecard.Benchmark(e.manifest, gradings, *res)
	if err != nil {
		return err
	}
	if err := artifacts.WriteFile(filepath.Join(e.dir, record.FileBenchmark), b, 0o644); err != nil {
		return err
	}
	if err := artifacts.WriteFile(filepath.Join(e.dir, record.FileBenchmarkMD), scorecard.Markdown(e.manifest, *res), 0o644); err != nil {
		return err
	}
	j, err := scorecard.JUnit(e.manifest, gradings, *res)
	if err != nil {
		return err
	}
	return artifacts.WriteFile(filepath.Join(e.dir, record.FileEvalJUnit), j, 0o644)
}

// redact keeps the API key out of every file of the eval directory.
func (e *evalRun) redact() *artifacts.Redactor {
	secrets := append([]string{e.opts.Common.APIKey}, artifacts.URLSecrets(e.opts.BaseURL)...)
	return artifacts.NewRedactor(append(secrets, artifacts.URLSecrets(e.opts.GraderBaseURL)...)...)
}

// gradedCell is a grading written and not yet vouched for by the journal.
type gradedCell struct {
	path, cell string
	digest     artifacts.Digest
	run        [2]string
}

// recordGraded makes the gradings durable, then journals each.
func (e *evalRun) recordGraded(written []gradedCell) error {
	if len(written) == 0 {
		return nil
	}
	paths := make([]string, len(written))
	for i, w := range written {
		paths[i] = w.path
	}
	if err := artifacts.SyncFiles(paths); err != nil {
		return err
	}
	for _, w := range written {
		if _, err := e.journal.AppendDeferred(record.EventCellGraded, map[string]any{"cell": w.cell, "digest": w.digest, "runId": w.run[0], "journalHead": w.run[1]}); err != nil {
			return err
		}
		e.graded[w.cell] = w.digest
		e.gradedRun[w.cell] = w.run
	}
	return e.journal.Sync()
}
