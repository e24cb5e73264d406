package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/rundir"
)

// Resume continues a stopped pipeline: phases that succeeded are reused
// once their recorded result digests check out, a phase whose run stopped
// resumably resumes from its own journal (with the run's own drift
// checks), one that failed for good runs again (its directory kept beside
// as <name>.attempt-N), and the phases after them run.
func Resume(ctx context.Context, o ResumeOptions) (*record.PipelineResult, error) {
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, outcome.Usage("pipeline_dir_invalid", "%s: %v", o.Dir, err)
	}
	l := pipelineLayout
	if _, err := os.Stat(filepath.Join(dir, batchLayout.manifest)); err == nil {
		l = batchLayout
	}
	var m record.PipelineManifest
	if err := artifacts.ReadJSONBeneath(dir, l.manifest, l.manifestType, l.version, &m); err != nil {
		return nil, outcome.Usage("pipeline_dir_invalid", "%s is not a pipeline or batch directory (%v): give the directory `harness pipeline run` or `harness batch run` printed", o.Dir, err)
	}
	if err := o.Settings.check(); err != nil {
		return nil, err
	}
	unlock, err := lock(dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	events, head, err := readJournal(dir, l, o.RunKey)
	if err != nil {
		return nil, err
	}
	var f *File
	if l.kind == "batch" {
		f, err = loadBatchFor(m)
	} else {
		f, err = Load(m.File, m.VarOverrides)
	}
	if err != nil {
		return nil, err
	}
	p := newPipe(f, dir, l, o.Common)
	p.manifest, p.maxTurns, p.baseURL, p.endpoint, p.resumed = m, o.MaxTurns, o.BaseURL, o.BaseURL, o.Settings
	if err := p.openJournal(int64(len(events))+1, head); err != nil {
		return nil, err
	}
	defer p.journal.Close()
	if f.Digest != m.FileDigest {
		drift := map[string]any{"file": m.File, "recorded": m.FileDigest, "current": f.Digest, "allowed": o.AllowDrift}
		if err := p.event(p.layout.drift(), drift); err != nil {
			return nil, err
		}
		if !o.AllowDrift {
			return nil, outcome.Policy("pipeline_drift", "the pipeline file %s changed since the pipeline started (recorded %s, now %s); nothing was run. Undo the change, or resume with --allow-drift to run the remaining phases from the changed file", m.File, m.FileDigest, f.Digest)
		}
		p.manifest.FileDigest, p.manifest.Vars = f.Digest, f.Vars
		p.setDeclared()
		if err := p.redact().WriteJSON(filepath.Join(dir, p.layout.manifest), p.manifest); err != nil {
			return nil, err
		}
	}
	last := lastOutcomes(events, l.unitFinished())
	p.fresh = freshStarts(events, l)
	for _, ph := range f.Phases {
		if err := p.takeOver(ph.Name, last[ph.Name]); err != nil {
			return nil, err
		}
	}
	if p.decisions, err = p.routeDecisions(o.Approve, o.Deny); err != nil {
		return nil, err
	}
	p.decisionReason, p.decisionActor = o.DenyReason, o.Actor
	if err := p.event(p.layout.resumed(), map[string]any{"reused": len(p.done), "resuming": len(p.resumable)}); err != nil {
		return nil, err
	}
	return p.execute(ctx)
}

// takeOver decides what a resume does with one phase, from how it last
// ended.
func (p *pipe) takeOver(name string, prev *record.PhaseOutcome) error {
	runDir := p.runDir(name)
	if prev != nil && prev.RunDir != "" {
		// The journal's word for where the run is must be where harness
		// puts it, as `harness verify` holds it (one rule for both).
		if _, err := unitRunDir(p.manifest.Version, p.dir, p.layout, name, prev.RunDir); err != nil {
			return outcome.Policy("pipeline_journal_tampered", "the %s journal's path of %s %s's run directory, %s, %v: the journal was edited; nothing was run", p.layout.kind, p.layout.unit, name, prev.RunDir, err)
		}
	}
	if prev != nil && prev.Status == "succeeded" {
		// Opened once: what is verified and handed on below is read
		// through this descriptor, never by the path again.
		u, err := openUnitRun(p.dir, filepath.Join(p.layout.runs, name))
		if err != nil {
			return outcome.Policy("phase_run_unverified", "%s %s succeeded, but its run directory %s %v; nothing was run", p.layout.unit, name, runDir, err)
		}
		defer u.Close()
		b, err := u.read(record.FileResult)
		if err != nil || artifacts.DigestBytes(b) != prev.ResultDigest {
			return outcome.Policy("phase_result_changed", "%s %s succeeded, but its result.json is missing or no longer matches the digest the %s journal recorded (%s); nothing was run. Restore %s, or start again", p.layout.unit, name, p.layout.kind, prev.ResultDigest, runDir)
		}
		var r record.Result
		if err := artifacts.DecodeArtifact(b, record.TypeResult, 1, &r); err != nil {
			return outcome.Policy("phase_result_changed", "%s %s: result.json does not decode: %v", p.layout.unit, name, err)
		}
		// What a later phase is handed must be what this one left: its
		// run verifies, it is the run the journal recorded, and its
		// answer file is the one it wrote.
		rep, err := u.verify(p.common.RunKey)
		if err != nil || !rep.OK {
			why := "it cannot be read"
			if err == nil {
				why = rep.Problem.Code + ": " + rep.Problem.Message
			}
			return outcome.Policy("phase_run_unverified", "%s %s succeeded, but its run directory does not verify (%s); nothing was run", p.layout.unit, name, why)
		}
		if err := checkIdentity(p.manifest.Version, prev, rep); err != nil {
			return outcome.Policy("phase_run_replaced", "%s %s succeeded, but its run directory %s %v; nothing was run", p.layout.unit, name, runDir, err)
		}
		if err := p.checkAnswer(name, prev.AnswerDigest); err != nil {
			return err
		}
		reused := *prev
		reused.Reused = true
		p.done[name] = &phaseDone{outcome: reused, result: &r}
		return p.event(p.layout.unitReused(), map[string]any{p.layout.unit: name, "resultDigest": prev.ResultDigest})
	}
	if _, err := os.Stat(filepath.Join(runDir, record.FileManifest)); err != nil {
		// Never started, skipped, or refused before its run existed.
		if _, serr := os.Lstat(runDir); serr == nil {
			return p.setAside(name)
		}
		return nil
	}
	var r record.Result
	if err := artifacts.ReadJSONBeneath(runDir, record.FileResult, record.TypeResult, 1, &r); err == nil && !r.Resumable {
		return p.setAside(name)
	}
	// A run that ended resumably, or one that never wrote its result (a
	// crash): the run's own resume takes it from its journal, once it is
	// the run the journal recorded (unless a fresh start came after that
	// record, which the directory then holds).
	if prev != nil && prev.RunDir != "" && !p.fresh[name] {
		if err := p.sameRun(name, prev); err != nil {
			return err
		}
	}
	p.resumable[name] = true
	return nil
}

// sameRun holds the run directory of a unit about to resume to the run
// the journal recorded when it last ended. One that does not verify is
// left to the run's own resume, which refuses it in its words.
func (p *pipe) sameRun(name string, prev *record.PhaseOutcome) error {
	u, err := openUnitRun(p.dir, filepath.Join(p.layout.runs, name))
	if err != nil {
		return nil
	}
	defer u.Close()
	rep, err := u.verify(p.common.RunKey)
	if err != nil || !rep.OK {
		return nil
	}
	if err := checkIdentity(p.manifest.Version, prev, rep); err != nil {
		return outcome.Policy("phase_run_replaced", "%s %s's run directory %s %v; nothing was run", p.layout.unit, name, u.path, err)
	}
	return nil
}

// freshStarts are the units started afresh after their last finished
// line: their directory holds a newer run than that line records.
func freshStarts(events []artifacts.Event, l layout) map[string]bool {
	out := map[string]bool{}
	for _, ev := range events {
		switch ev.Type {
		case l.unitFinished():
			var o record.PhaseOutcome
			if json.Unmarshal(ev.Data, &o) == nil {
				delete(out, o.Name)
			}
		case l.unitStarted():
			var d struct {
				Resume bool `json:"resume"`
			}
			if json.Unmarshal(ev.Data, &d) == nil && !d.Resume {
				out[unitOf(l, ev)] = true
			}
		}
	}
	return out
}

// setAside moves a phase's finished, unresumable run directory out of the
// way, so that the phase runs again and nothing is lost.
func (p *pipe) setAside(name string) error {
	runDir := p.runDir(name)
	for n := 1; n < 1000; n++ {
		aside := fmt.Sprintf("%s.attempt-%d", runDir, n)
		if _, err := os.Lstat(aside); err == nil {
			continue
		}
		if err := os.Rename(runDir, aside); err != nil {
			return fmt.Errorf("%s %s: keep the failed attempt: %w", p.layout.unit, name, err)
		}
		return nil
	}
	return fmt.Errorf("%s %s: too many earlier attempts in %s", p.layout.unit, name, filepath.Dir(runDir))
}

// lastOutcomes is each phase's last recorded end.
func lastOutcomes(events []artifacts.Event, finished string) map[string]*record.PhaseOutcome {
	out := map[string]*record.PhaseOutcome{}
	for _, ev := range events {
		if ev.Type != finished {
			continue
		}
		var o record.PhaseOutcome
		if json.Unmarshal(ev.Data, &o) == nil && o.Name != "" {
			out[o.Name] = &o
		}
	}
	return out
}

// readJournal reads and verifies the journal of the pipeline or batch
// directory dir, opened as verify opens it (beneath dir, through no link,
// a regular file). A torn last line (a crash mid-write) is cut off through
// that descriptor; bytes after the finished event and a broken chain are
// refused.
func readJournal(dir string, l layout, key []byte) ([]artifacts.Event, artifacts.Digest, error) {
	path := filepath.Join(dir, l.journal)
	fh, err := artifacts.OpenBeneath(dir, l.journal, os.O_RDWR, 0)
	switch {
	case errors.Is(err, artifacts.ErrOutsideDir) || errors.Is(err, artifacts.ErrNotRegular):
		return nil, "", outcome.Policy("pipeline_journal_tampered", "the %s journal %s is not a regular file inside the %s directory (%v): harness writes only regular files there; nothing was run", l.kind, path, l.kind, err)
	case err != nil:
		return nil, "", outcome.Usage("pipeline_dir_invalid", "%s journal: %v", l.kind, err)
	}
	defer fh.Close()
	c, err := rundir.ReadJournal(fh)
	if err != nil {
		return nil, "", outcome.Policy("pipeline_journal_invalid", "the %s journal %s cannot be read (%v); nothing was run", l.kind, path, err)
	}
	if err := afterEnd(c, l); err != nil {
		return nil, "", outcome.Policy("pipeline_journal_tampered", "the %s journal %s: %v; nothing was run", l.kind, path, err)
	}
	if c.TornTail {
		if err := fh.Truncate(c.ValidSize); err != nil {
			return nil, "", err
		}
	}
	if len(key) == 0 && len(c.Events) > 0 && artifacts.Sealed(c.Events[0].Raw) {
		return nil, "", outcome.Policy("pipeline_journal_sealed", "the journal %s is sealed: set HARNESS_RUN_KEY to the key it was written with to resume it; nothing was run", path)
	}
	head, err := artifacts.VerifyChain(c.Events, key)
	if err != nil {
		var ce *artifacts.ChainError
		if errors.As(err, &ce) {
			return nil, "", outcome.Policy("pipeline_journal_tampered", "the pipeline journal %s fails its hash chain (%v): it was edited; nothing was run", path, err)
		}
		return nil, "", err
	}
	return c.Events, head, nil
}

// lock holds the pipeline directory for one resume at a time.
func lock(dir string) (func(), error) {
	fh, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(fh.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		fh.Close()
		return nil, outcome.Usage("pipeline_locked", "%s is being run or resumed by another harness process; wait for it to end", dir)
	}
	return func() { fh.Close() }, nil
}

// checkAnswer holds answers/<name>.md to the digest the journal recorded
// when the unit wrote it.
func (p *pipe) checkAnswer(name string, want artifacts.Digest) error {
	if want == "" {
		return nil
	}
	b, err := artifacts.ReadBeneath(p.dir, filepath.Join(record.DirAnswers, name+".md"))
	if err != nil || artifacts.DigestBytes(b) != want {
		return outcome.Policy("phase_answer_changed", "%s %s's answer file %s is not the one it wrote (the journal recorded %s); nothing that reads it was run. Restore it, or start again", p.layout.unit, name, p.answerFile(name), want)
	}
	return nil
}
