package pipeline

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
)

// A scheduler that runs each phase in a pod of its own (an Argo Workflow)
// runs `harness pipeline run FILE --phase NAME` against one pipeline
// directory on shared storage. Each such process holds the directory's
// lock only while it reads and records; the phase itself runs unlocked, so
// phases the scheduler starts together run together.

// runAlone runs the phase o.Phase of the pipeline directory o.ID names,
// creating the directory when this is its first phase. The phases it
// needs must have succeeded there, each verified before what it left is
// handed on. A phase that already succeeded is not run again; one whose
// run stopped resumably resumes (a scheduler's retry continues the run).
func runAlone(ctx context.Context, f *File, o Options) (*record.PipelineResult, error) {
	ph := f.phase(o.Phase)
	if ph == nil {
		return nil, outcome.Usage("phase_unknown", "--phase %s: %s has no such phase (its phases: %s)", o.Phase, f.Path, strings.Join(order(f.Phases), ", "))
	}
	if o.ID == "" {
		return nil, outcome.Usage("phase_needs_id", "--phase needs --id: every phase of one pipeline must name the same pipeline directory")
	}
	dir, err := newDir(pipelineLayout, o)
	if err != nil {
		return nil, err
	}
	p, unlock, err := joinDir(ctx, f, dir, o)
	if err != nil {
		return nil, err
	}
	events, head, err := readJournal(dir, p.layout, o.RunKey)
	if err == nil {
		err = p.openJournal(int64(len(events))+1, head)
	}
	if err != nil {
		unlock()
		return nil, err
	}
	last := lastOutcomes(events, p.layout.unitFinished())
	p.fresh = freshStarts(events, p.layout)
	start, err := p.prepareAlone(ph, last)
	if err != nil || start == nil {
		res := p.partialResult(events, nil)
		if ferr, jerr := p.writeResult(res, order(p.file.Phases), true); err == nil {
			err = errors.Join(ferr, jerr)
		}
		p.journal.Close()
		unlock()
		return res, err
	}
	p.journal.Close()
	unlock()

	done := p.runPhase(ctx, ph, start.resume, p.templateData(ph), p.handedOff(ph))

	// What other phases recorded meanwhile comes first in the journal.
	unlock, err = lockWait(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if events, head, err = readJournal(dir, p.layout, o.RunKey); err != nil {
		return nil, err
	}
	if err := p.openJournal(int64(len(events))+1, head); err != nil {
		return nil, err
	}
	defer p.journal.Close()
	if err := p.event(p.layout.unitFinished(), done.outcome); err != nil {
		return nil, err
	}
	o2 := done.outcome
	fmt.Fprintf(p.out, "harness: %s %s %s (exit %d, %d tokens, %s)\n", p.layout.unit, o2.Name, o2.Status, o2.ExitCode, o2.Usage.TotalTokens,
		(time.Duration(o2.DurationMs) * time.Millisecond).Round(time.Millisecond))
	res := p.partialResult(events, &done.outcome)
	if ferr, jerr := p.writeResult(res, order(p.file.Phases), true); ferr != nil || jerr != nil {
		return res, errors.Join(ferr, jerr)
	}
	if o2.Status != "succeeded" {
		return res, &outcome.Error{Code: "phase_" + o2.Status, Msg: fmt.Sprintf("phase %s: %s", o2.Name, o2.Message), Exit: max(o2.ExitCode, outcome.ExitFailed)}
	}
	return res, nil
}

// aloneStart says how the phase starts: afresh or resuming its run.
type aloneStart struct{ resume bool }

// prepareAlone checks, under the lock, that the phase may run: every
// phase it needs succeeded (and verifies), and it did not succeed
// already. It journals the phase's start, or why it was refused; nil
// with no error means there is nothing to run.
func (p *pipe) prepareAlone(ph *Phase, last map[string]*record.PhaseOutcome) (*aloneStart, error) {
	for _, need := range ph.Needs {
		prev := last[need]
		if prev == nil || prev.Status != "succeeded" {
			state := "has not run"
			if prev != nil {
				state = "ended " + prev.Status
			}
			p.event(p.layout.unitRefused(), map[string]any{p.layout.unit: ph.Name, "because": need, "needStatus": state})
			return nil, outcome.Usage("phase_needs_unmet", "phase %s needs %s, which %s in %s: nothing was run; run %s first (a Workflow's DAG does)", ph.Name, need, state, p.dir, need)
		}
		if err := p.takeOver(need, prev); err != nil {
			return nil, err
		}
	}
	if prev := last[ph.Name]; prev != nil && prev.Status == "succeeded" {
		if err := p.takeOver(ph.Name, prev); err != nil {
			return nil, err
		}
		fmt.Fprintf(p.out, "harness: phase %s already succeeded in %s; nothing to run\n", ph.Name, p.dir)
		return nil, nil
	}
	if err := p.takeOver(ph.Name, last[ph.Name]); err != nil {
		return nil, err
	}
	resume := p.resumable[ph.Name]
	if err := p.event(p.layout.unitStarted(), map[string]any{p.layout.unit: ph.Name, "runDir": p.recordedRunDir(ph.Name), "resume": resume, "alone": true}); err != nil {
		return nil, err
	}
	return &aloneStart{resume: resume}, nil
}

// joinDir takes the lock of the pipeline directory dir, creating and
// recording it when it does not exist yet, and checks that it holds this
// pipeline as this invocation asks it. The caller releases the lock.
func joinDir(ctx context.Context, f *File, dir string, o Options) (*pipe, func(), error) {
	if err := os.Mkdir(dir, 0o755); err == nil {
		unlock, err := lockWait(ctx, dir)
		if err != nil {
			return nil, nil, err
		}
		p, err := initDir(f, dir, pipelineLayout, o, nil)
		if err != nil {
			unlock()
			return nil, nil, err
		}
		p.journal.Close()
		return p, unlock, nil
	} else if !errors.Is(err, os.ErrExist) {
		return nil, nil, outcome.Usage("artifacts_dir_invalid", "create %s: %v", dir, err)
	}
	// The process that made the directory records it under the lock it
	// takes right after; give it a moment.
	var m record.PipelineManifest
	for tries := 0; ; tries++ {
		unlock, err := lockWait(ctx, dir)
		if err != nil {
			return nil, nil, err
		}
		err = artifacts.ReadJSONBeneath(dir, pipelineLayout.manifest, pipelineLayout.manifestType, record.PipelineVersion, &m)
		if err == nil {
			p := newPipe(f, dir, pipelineLayout, o.Common)
			p.manifest, p.endpoint = m, o.BaseURL
			if err := p.sameAsked(f, o); err != nil {
				unlock()
				return nil, nil, err
			}
			return p, unlock, nil
		}
		unlock()
		if !errors.Is(err, os.ErrNotExist) || tries == 50 {
			return nil, nil, outcome.Usage("pipeline_dir_invalid", "%s is not a pipeline directory (%v): give --phase the --id of a pipeline, or a new one", dir, err)
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// sameAsked refuses a pipeline directory that another file, other vars or
// other settings started: each phase's pod must run the pipeline the
// directory records.
func (p *pipe) sameAsked(f *File, o Options) error {
	m := p.manifest
	if f.Digest != m.FileDigest {
		return outcome.Policy("pipeline_drift", "the pipeline file %s is not the one %s started with (recorded %s, now %s); nothing was run", f.Path, p.dir, m.FileDigest, f.Digest)
	}
	var recorded record.Settings
	if m.Settings != nil {
		recorded = *m.Settings
	}
	if !reflect.DeepEqual(keysOf(recorded), keysOf(o.Settings.Settings)) || !reflect.DeepEqual(nonNilMap(m.VarOverrides), nonNilMap(o.Vars)) ||
		m.BaseURL != artifacts.EndpointOf(o.BaseURL) || m.Workspace != absOrEmpty(o.Workspace) || m.Record != absOrEmpty(o.Record) || m.Replay != absOrEmpty(o.Replay) {
		return outcome.Usage("phase_settings_differ", "%s was started with other --var, run settings, --workspace, --base-url or cassette flags: give every phase of one pipeline the same ones", p.dir)
	}
	return nil
}

// partialResult sums up the pipeline as its journal stands, with the
// phase that just finished: a phase nothing recorded yet is not_started.
func (p *pipe) partialResult(events []artifacts.Event, now *record.PhaseOutcome) *record.PipelineResult {
	last := lastOutcomes(events, p.layout.unitFinished())
	if now != nil {
		last[now.Name] = now
	}
	names := order(p.file.Phases)
	for _, n := range names {
		if o := last[n]; o != nil {
			p.done[n] = &phaseDone{outcome: *o}
			continue
		}
		p.done[n] = &phaseDone{outcome: record.PhaseOutcome{Name: n, Status: statusNotStarted, Reason: "not_run", ExitCode: outcome.ExitInterrupted, Message: "not started: no pod has run it yet"}}
	}
	return p.result(names)
}

// allFinished reports whether every phase has ended, one way or another.
func allFinished(res *record.PipelineResult) bool {
	for _, ph := range res.Phases {
		if ph.Status == statusNotStarted {
			return false
		}
	}
	return true
}

// lockWait takes the pipeline directory's lock, waiting while another
// process holds it.
func lockWait(ctx context.Context, dir string) (func(), error) {
	fh, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err := unix.Flock(int(fh.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { fh.Close() }, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			fh.Close()
			return nil, fmt.Errorf("lock %s: %w", dir, err)
		}
		select {
		case <-ctx.Done():
			fh.Close()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func nonNilMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
