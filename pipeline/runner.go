package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/audit"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/rundir"
	"github.com/harness-dev/harness/skills"
)

// Options configure a new pipeline run.
type Options struct {
	File string
	// Vars override the file's vars (--var NAME=VALUE).
	Vars map[string]string
	// ArtifactsDir holds pipeline directories ("" = .harness/pipelines);
	// ID names this one ("" = a new time-sortable id).
	ArtifactsDir string
	ID           string
	// Jobs is how many independent phases run at once (0 = 1).
	Jobs int
	// Workspace and BaseURL override the file's defaults ("" = keep).
	Workspace string
	BaseURL   string
	// Settings are the command line's run settings for every unit: over
	// the file's defaults, under each unit's own fields.
	Settings Layer
	// Record and Replay are cassette directories: each phase records to
	// or replays from <dir>/<phase>.jsonl.
	Record string
	Replay string
	// Phase runs only this phase, in the pipeline directory ID names
	// (made by whichever phase comes first), once the phases it needs
	// have succeeded there: how a scheduler with a pod per phase runs a
	// pipeline.
	Phase string
	Common
}

// Common are what a run and a resume of a pipeline both take from the
// command line and the environment; none of it is recorded.
type Common struct {
	APIKey string
	RunKey []byte
	// Stderr receives each phase's progress, prefixed with its name.
	Stderr io.Writer
	// OnEvent receives each pipeline journal line (--json).
	OnEvent func(line []byte)
	Now     func() time.Time
	Version string
	// SnapshotCache is given to every run (see run.Options).
	SnapshotCache string
}

// ResumeOptions configure a resume of a stopped pipeline.
type ResumeOptions struct {
	Dir string
	// AllowDrift continues although the pipeline file changed; the change
	// is recorded and the new file used for the phases still to run.
	AllowDrift bool
	// MaxTurns raises the turn limit of phases that resume from their
	// journal: "N" in all, "+N" more than used ("" = as recorded).
	MaxTurns string
	// BaseURL moves the remaining phases to another endpoint (transport,
	// as for `harness resume --base-url`).
	BaseURL string
	// Settings change how the remaining units reach the model and how
	// long they may go on, over what the pipeline recorded.
	Settings Layer
	// Approve and Deny decide calls units left waiting for a person, each
	// CALL_ID or UNIT:CALL_ID; DenyReason and Actor as for `harness resume`.
	Approve, Deny     []string
	DenyReason, Actor string
	Common
}

// DefaultArtifactsDir is where pipeline directories go by default.
const DefaultArtifactsDir = ".harness/pipelines"

// DefaultBatchDir is where batch directories go by default.
const DefaultBatchDir = ".harness/batches"

// Phase states during execution.
const (
	statusSkipped    = "skipped"
	statusNotStarted = "not_started"
)

// pipe is one execution (a run or a resume) of a pipeline.
type pipe struct {
	file     *File
	layout   layout
	manifest record.PipelineManifest
	dir      string
	journal  *artifacts.Journal
	common   Common
	start    time.Time
	out      *syncWriter
	// done holds each finished phase's outcome and result, by name.
	done map[string]*phaseDone
	// resumable are phases whose stopped run resumes from its journal.
	resumable map[string]bool
	// fresh are units started afresh after their last finished line (a
	// resume's view of the journal).
	fresh map[string]bool
	// maxTurns and baseURL are ResumeOptions', for those.
	maxTurns, baseURL string
	// decisions are ResumeOptions' approvals, by unit.
	decisions                     map[string]unitDecisions
	decisionReason, decisionActor string
	// previous is one snapshot of the shared skill roots, taken before the
	// first unit starts, whose digests every unit's own snapshot reuses
	// for files whose stat fingerprint is unchanged.
	previous *skills.Registry
	audits   *audit.Cache
	// endpoint is the base URL as given, credentials and all (the
	// manifest keeps it without them).
	endpoint string
	// resumed are the settings a resume gave, over everything recorded.
	resumed Layer
}

type phaseDone struct {
	outcome record.PhaseOutcome
	result  *record.Result
}

// Run executes a pipeline file from the start.
func Run(ctx context.Context, o Options) (*record.PipelineResult, error) {
	f, err := Load(o.File, o.Vars)
	if err != nil {
		return nil, err
	}
	if o.Phase != "" {
		return runAlone(ctx, f, o)
	}
	return start(ctx, f, pipelineLayout, o, nil)
}

// start creates the directory of a pipeline or a batch, records what it
// was asked and executes it. shape, when set, adds to the manifest.
func start(ctx context.Context, f *File, l layout, o Options, shape func(*record.PipelineManifest)) (*record.PipelineResult, error) {
	dir, err := newDir(l, o)
	if err != nil {
		return nil, err
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, outcome.Usage(l.kind+"_exists", "%s directory %s already exists: resume it with `harness %s resume %s`, or pass another --id", l.kind, dir, l.kind, dir)
		}
		return nil, outcome.Usage("artifacts_dir_invalid", "create %s: %v", dir, err)
	}
	unlock, err := lock(dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	p, err := initDir(f, dir, l, o, shape)
	if err != nil {
		return nil, err
	}
	defer p.journal.Close()
	return p.execute(ctx)
}

// newDir checks the settings and the id and names the directory a new
// pipeline or batch goes into, making its parent.
func newDir(l layout, o Options) (string, error) {
	if err := o.Settings.check(); err != nil {
		return "", err
	}
	id := o.ID
	if id == "" {
		id = rundir.NewRunID(clock(o.Now)())
	}
	if err := rundir.CheckRunID(id); err != nil {
		return "", outcome.Usage(l.kind+"_id_invalid", "--id %q must be 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit", id)
	}
	base := o.ArtifactsDir
	if base == "" {
		base = DefaultArtifactsDir
		if l.kind == "batch" {
			base = DefaultBatchDir
		}
	}
	base, err := filepath.Abs(base)
	if err != nil {
		return "", outcome.Usage("artifacts_dir_invalid", "--artifacts-dir: %v", err)
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", outcome.Usage("artifacts_dir_invalid", "--artifacts-dir %s: %v", base, err)
	}
	return filepath.Join(base, id), nil
}

// initDir records, in the empty directory dir (locked by the caller),
// what the pipeline or batch was asked, and opens its journal with the
// started event.
func initDir(f *File, dir string, l layout, o Options, shape func(*record.PipelineManifest)) (*pipe, error) {
	m := record.PipelineManifest{
		Envelope:  artifacts.NewEnvelope(l.manifestType, l.version),
		CreatedAt: clock(o.Now)().UTC(), HarnessVersion: o.Version,
		File: f.Path, FileDigest: f.Digest, Vars: f.Vars, VarOverrides: o.Vars, Jobs: max(o.Jobs, 1),
		Workspace: absOrEmpty(o.Workspace), BaseURL: artifacts.EndpointOf(o.BaseURL), Record: absOrEmpty(o.Record), Replay: absOrEmpty(o.Replay),
	}
	m.SetID(l.kind, filepath.Base(dir))
	p := newPipe(f, dir, l, o.Common)
	if len(keysOf(o.Settings.Settings)) > 0 {
		m.Settings, m.SettingSources = &o.Settings.Settings, o.Settings.Sources
	}
	p.manifest, p.endpoint = m, o.BaseURL
	p.setDeclared()
	if shape != nil {
		shape(&p.manifest)
	}
	if err := p.redact().WriteJSON(filepath.Join(dir, p.layout.manifest), p.manifest); err != nil {
		return nil, err
	}
	if err := p.openJournal(1, ""); err != nil {
		return nil, err
	}
	if err := p.event(p.layout.started(), map[string]any{"id": m.ID(), "file": f.Path, "fileDigest": f.Digest, "digest": p.manifest.Digest, "order": order(f.Phases)}); err != nil {
		p.journal.Close()
		return nil, err
	}
	return p, nil
}

func newPipe(f *File, dir string, l layout, c Common) *pipe {
	var w io.Writer = io.Discard
	if c.Stderr != nil {
		w = c.Stderr
	}
	return &pipe{file: f, dir: dir, layout: l, common: c, start: clock(c.Now)(), out: &syncWriter{w: w},
		done: map[string]*phaseDone{}, resumable: map[string]bool{}}
}

// setDeclared records the declarations in the manifest, as phases or as
// tasks.
func (p *pipe) setDeclared() {
	units, d := p.declare()
	p.manifest.Digest = d
	if p.layout.kind == "batch" {
		p.manifest.Phases, p.manifest.Tasks = nil, units
	} else {
		p.manifest.Phases, p.manifest.Tasks = units, nil
	}
}

// declare digests each phase's declaration and the whole.
func (p *pipe) declare() ([]record.PipelinePhase, artifacts.Digest) {
	h := artifacts.NewHasher()
	h.WriteField("harness.pipeline/1")
	h.WriteField(string(p.file.Digest))
	keys := make([]string, 0, len(p.file.Vars))
	for k := range p.file.Vars {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		h.WriteField(k + "=" + p.file.Vars[k])
	}
	var out []record.PipelinePhase
	for _, ph := range p.file.Phases {
		decl, _ := json.Marshal(struct {
			Defaults Defaults         `json:"defaults"`
			Command  *record.Settings `json:"command,omitempty"`
			Phase    Phase            `json:"phase"`
		}{p.file.Defaults, p.manifest.Settings, ph})
		d := artifacts.DigestBytes(decl)
		h.WriteField(ph.Name + ":" + string(d))
		out = append(out, record.PipelinePhase{Name: ph.Name, Needs: nonNil(ph.Needs), Digest: d, RunDir: p.recordedRunDir(ph.Name)})
	}
	return out, h.Digest()
}

// redact keeps the key out of everything the pipeline writes.
func (p *pipe) redact() *artifacts.Redactor {
	return artifacts.NewRedactor(append([]string{p.common.APIKey, string(p.common.RunKey)}, artifacts.URLSecrets(p.endpoint)...)...)
}

// runDir is where unit name's run directory is now; recordedRunDir is how
// the journal and manifest record it.
func (p *pipe) runDir(name string) string { return filepath.Join(p.dir, p.layout.runs, name) }

func (p *pipe) recordedRunDir(name string) string {
	return recordedRunDir(p.manifest.Version, p.dir, p.layout, name)
}

func (p *pipe) openJournal(next int64, head artifacts.Digest) error {
	j, err := artifacts.OpenJournal(filepath.Join(p.dir, p.layout.journal), next)
	if err != nil {
		return err
	}
	j.SetClock(clock(p.common.Now))
	j.SetRedactor(p.redact())
	// Chained from the first line, and sealed like a run's journal when
	// the operator gives HARNESS_RUN_KEY.
	j.Continue(head, p.common.RunKey)
	if p.common.OnEvent != nil {
		j.Tee(p.common.OnEvent)
	}
	p.journal = j
	return nil
}

func (p *pipe) event(typ string, data any) error {
	_, err := p.journal.Append(typ, data)
	return err
}

// finished is a phase run's report back to the scheduler.
type finished struct {
	name string
	done *phaseDone
}

// execute runs every phase not yet done, in dependency order, up to Jobs
// at a time, and writes the pipeline result.
func (p *pipe) execute(ctx context.Context) (*record.PipelineResult, error) {
	names := order(p.file.Phases)
	p.previous, p.audits = p.snapshot(ctx), audit.NewCache()
	if dir := p.common.SnapshotCache; dir != "" {
		// Findings outlive the pipeline too, as the snapshot cache does.
		p.audits = audit.OpenCache(dir)
		defer p.audits.Save()
	}
	state := map[string]string{} // "", running, done
	for n := range p.done {
		state[n] = "done"
	}
	results := make(chan finished)
	running := 0
	var journalErr error
	note := func(typ string, data any) {
		if err := p.event(typ, data); err != nil && journalErr == nil {
			journalErr = err
		}
	}
	for {
		for _, n := range names {
			if state[n] != "" {
				continue
			}
			ph := p.file.phase(n)
			ready, failedNeed := true, ""
			for _, need := range ph.Needs {
				d, ok := p.done[need]
				switch {
				case !ok:
					ready = false
				case d.outcome.Status != "succeeded" && failedNeed == "":
					failedNeed = need
				}
			}
			if failedNeed != "" {
				state[n] = "done"
				msg := fmt.Sprintf("not run: %s %s, which it needs, did not succeed (%s)", p.layout.unit, failedNeed, p.done[failedNeed].outcome.Status)
				p.done[n] = &phaseDone{outcome: record.PhaseOutcome{Name: n, Status: statusSkipped, Reason: "dependency_failed", ExitCode: p.done[failedNeed].outcome.ExitCode, Message: msg}}
				note(p.layout.unitSkipped(), map[string]any{p.layout.unit: n, "because": failedNeed})
				continue
			}
			if !ready || running >= p.manifest.Jobs || ctx.Err() != nil || journalErr != nil {
				continue
			}
			state[n] = "running"
			running++
			resume := p.resumable[n]
			data, handed := p.templateData(ph), p.handedOff(ph)
			note(p.layout.unitStarted(), map[string]any{p.layout.unit: n, "runDir": p.recordedRunDir(n), "resume": resume})
			go func() {
				results <- finished{n, p.runPhase(ctx, ph, resume, data, handed)}
			}()
		}
		if running == 0 {
			break
		}
		f := <-results
		running--
		state[f.name] = "done"
		p.done[f.name] = f.done
		note(p.layout.unitFinished(), f.done.outcome)
		// One line per finished unit, for a CI log that shows only the end.
		o := f.done.outcome
		fmt.Fprintf(p.out, "harness: %s %s %s (exit %d, %d tokens, %s)\n", p.layout.unit, o.Name, o.Status, o.ExitCode, o.Usage.TotalTokens,
			(time.Duration(o.DurationMs) * time.Millisecond).Round(time.Millisecond))
	}
	for _, n := range names {
		if _, ok := p.done[n]; !ok {
			p.done[n] = &phaseDone{outcome: record.PhaseOutcome{Name: n, Status: statusNotStarted, Reason: "interrupted", ExitCode: outcome.ExitInterrupted, Message: "not started: the pipeline stopped first"}}
		}
	}
	res := p.result(names)
	ferr, jerr := p.writeResult(res, names, false)
	if ferr != nil {
		return res, ferr
	}
	if jerr != nil && journalErr == nil {
		journalErr = jerr
	}
	if journalErr != nil {
		return res, outcome.Failed("pipeline_journal_failed", "the pipeline journal could not be written: %v; the pipeline stopped", journalErr)
	}
	if res.ExitCode != 0 {
		return res, &outcome.Error{Code: "pipeline_" + res.Status, Msg: res.Message, Exit: res.ExitCode}
	}
	return res, nil
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

func clock(now func() time.Time) func() time.Time {
	if now == nil {
		return time.Now
	}
	return now
}

func absOrEmpty(p string) string {
	if p == "" {
		return ""
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

func nonNil(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return xs
}
