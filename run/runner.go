package run

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/harness-dev/harness/approval"
	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/gate"
	"github.com/harness-dev/harness/internal/termsafe"
	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/resolve"
	"github.com/harness-dev/harness/rundir"
	"github.com/harness-dev/harness/runopts"
	"github.com/harness-dev/harness/skills"
	"github.com/harness-dev/harness/tools"
	"github.com/harness-dev/harness/workspace"
)

// Result is what a finished (or refused) run reports to the CLI.
type Result struct {
	RunID    string
	RunDir   string
	Status   string
	ExitCode int
	Final    string
	// Record is result.json's content.
	Record *record.Result
	// Outputs are the files a job reads, where the caller delivers Record
	// and the answer: the run's own, or a resume's override.
	Outputs record.Outputs
	// Workspace is the run's workspace, resolved: what the model could
	// change, so an output there is written without following a link.
	Workspace string
}

// runner carries one invocation's state from stage to stage. Run and
// Resume build it differently (from options, from a run directory) and
// then walk the same stages (stages.go).
type runner struct {
	// policyDigest is the digest of the policy snapshot last written: at a
	// segment's end it holds the skills the model loaded, so run.finished
	// names it for the verifier (a decision names the one in force then).
	policyDigest artifacts.Digest

	// loopStarted says the prompt loop began (the model may have been
	// asked something).
	loopStarted bool
	// approvals decides which calls wait for a person; pendingApprovals
	// are those waiting when the run stopped.
	approvals        *gate.Approvals
	pendingApprovals []record.PendingApproval
	// childWaiting are the calls waiting for a person inside this run's
	// delegate_task children, as CHILD_ID/CALL_ID.
	childWaiting []record.ApprovalRequested
	// mcp starts MCP servers and offers their tools (nil: none wanted).
	mcp  *tools.MCPHub
	opts Options
	lin  lineage
	// decisions are what the operator decided on resume (--approve,
	// --deny); they are journaled, not recorded in run.json.
	decisions approval.Decisions
	now       func() time.Time
	stderr    io.Writer
	res       resolved
	journal   *artifacts.Journal
	manifest  record.Manifest
	registry  *skills.Registry
	// onDisk is the skills as the resume's drift check found them on
	// disk: an approval is held to the version a person was asked about,
	// which --allow-drift does not change.
	onDisk  *skills.Registry
	acts    *tools.Activations
	catalog skills.Catalog
	token   string // frames skill context; see tools.BoundaryToken
	ws      *workspace.Workspace
	lock    *rundir.Lock

	segment  int           // 1 for the first run, then one more per resume
	segStart time.Time     // when this segment started
	start    loop.Progress // what earlier segments used
	limits   loop.Limits   // this segment's effective limits
	profiles []tools.Profile
	shared   loop.Model // the model, handed to subagents
	gate     *gate.Gate
	critical map[string][]string // skill -> critical content-scan rules
	findings []record.Finding

	// resumed is the stopped run rebuilt from its journal; nil for a new run.
	resumed *rundir.State
	// fellBack is set once --fallback-model took over.
	fellBack bool
	// acceptModelChange is resume's --allow-model-change.
	acceptModelChange bool
	// schema checks the final answer (--output-schema); nil without one.
	schema *loop.SchemaCheck
	// acceptDrift is resume's --allow-drift: continue despite drift. Tools
	// keep the run's own AllowDrift (they still hold files to the
	// run-start snapshot).
	acceptDrift bool
	// prevAnswer is the answer an earlier segment of the run gave (a
	// resumed or continued run): a segment that ends without one of its
	// own leaves it the run's answer, in result.json and the
	// --output-last-message file, rather than erasing it.
	prevAnswer string
	// driftRefused marks a resume refused for drift: the run stays
	// resumable (with --allow-drift, or once the drift is undone).
	driftRefused bool
	// redact keeps the API key (and Authorization header text) out of
	// everything the run writes or prints.
	redact *artifacts.Redactor
	// embed is find_skills' semantic stage (nil: BM25 alone).
	embed func(ctx context.Context, texts []string) ([][]float64, error)
	// journalErr is the first failed append of an event nothing waits on;
	// the run still ends failed because of it.
	journalErr error
}

func newRunner(now func() time.Time, stderr io.Writer) *runner {
	r := &runner{now: now, stderr: stderr}
	if r.now == nil {
		r.now = time.Now
	}
	if r.stderr == nil {
		r.stderr = io.Discard
	}
	return r
}

// Options is everything one `harness run` needs (see runopts).
type Options = runopts.Options

// lineage is what a run takes from where it was started rather than from
// its options: a child run (a subagent) inherits its parent's model (so
// one cassette serves both), the --profiles content as read once for the
// whole tree, its nesting depth and bound, and the activation source
// recorded for its preloads. A child (depth > 0) skips skills its profile
// names but the registry lacks instead of refusing.
type lineage struct {
	model            loop.Model
	profiles         []byte
	depth, maxDepth  int
	activationSource string
	// afterSnapshot lets in-package tests change the workspace between
	// the snapshot and the preload, the window the preload digest check
	// guards.
	afterSnapshot func()
}

// Run executes one `harness run`. It returns a Result whenever a run
// directory was created (even for a refusal, which is then recorded there)
// and an error carrying the exit code whenever the run did not succeed.
func Run(ctx context.Context, opts Options) (*Result, error) {
	return start(ctx, opts, lineage{})
}

func start(ctx context.Context, opts Options, lin lineage) (*Result, error) {
	r := newRunner(opts.Now, opts.Stderr)
	r.opts, r.lin = opts, lin
	r.redact = artifacts.NewRedactor(append([]string{opts.APIKey, string(opts.RunKey)}, artifacts.URLSecrets(opts.BaseURL)...)...)
	if err := runopts.Check(&r.opts, lin.model != nil); err != nil {
		return nil, err
	}
	if r.lin.maxDepth == 0 && r.lin.depth == 0 {
		r.lin.maxDepth = 1
	}
	if r.opts.RunID != "" {
		if err := rundir.CheckRunID(r.opts.RunID); err != nil {
			return nil, err
		}
	}
	if err := r.resolve(); err != nil {
		return nil, err
	}
	if err := r.loadProfiles(); err != nil {
		return nil, err
	}
	if err := r.create(); err != nil {
		return nil, err
	}
	defer r.lock.Release()
	defer r.journal.Close()
	res, err := r.execute(ctx)
	if outcome.ExitCode(err) == outcome.ExitUsage && !r.loopStarted {
		// A mistake in how harness was called, found before the model was
		// asked anything (an unknown skill, a bad option a stage checks):
		// the error says it all, and a directory of a run that never ran
		// would only be litter in the runs list.
		os.RemoveAll(r.res.runDir)
		return nil, err
	}
	return res, err
}

func (r *runner) resolve() error {
	ws, err := resolve.Workspace(r.opts.Workspace)
	if err != nil {
		return err
	}
	cwd, err := resolve.Cwd(ws, r.opts.Cwd)
	if err != nil {
		return err
	}
	roots, err := resolve.SkillsRoots(ws, r.opts.SkillsRoots)
	if err != nil {
		return err
	}
	external, err := resolve.ExternalRoots(ws, roots, r.opts.ExternalSkillsRoots)
	if err != nil {
		return err
	}
	id := r.opts.RunID
	if id == "" {
		id = rundir.NewRunID(r.now())
	}
	atts, err := resolve.Attachments(r.opts.Attach, ws)
	if err != nil {
		return err
	}
	r.res = resolved{workspace: ws, cwd: cwd, skillsRoots: roots, externalRoots: external, runID: id, attachments: atts}
	if runopts.StoresSkills(r.opts.AllowTools) && r.opts.ForgeRoot == "" && len(roots) > 0 {
		// Settled here, once, so that a resume (which restores it from
		// run.json) computes the same policy digest.
		r.opts.ForgeRoot = roots[0]
	}
	return nil
}

func (r *runner) loadProfiles() error {
	if r.opts.Profiles == "" {
		return nil
	}
	if r.lin.profiles == nil {
		data, err := artifacts.ReadFileAtMost(r.opts.Profiles, runopts.MaxOperatorFile)
		if err != nil {
			return outcome.Usage("profiles_invalid", "--profiles %s: %v", r.opts.Profiles, err)
		}
		r.lin.profiles = data
	}
	ps, err := tools.ParseProfiles(r.opts.Profiles, r.lin.profiles, tools.Parent{AllowTools: r.opts.AllowTools, AllowSkillScripts: r.opts.AllowSkillScripts, Sandbox: r.opts.Sandbox})
	r.profiles = ps
	return err
}

// create makes the run directory and journal and writes the first
// manifest. From here on every refusal is recorded in the run directory.
func (r *runner) create() error {
	dir, err := rundir.Create(r.opts.ArtifactsDir, r.res.runID, r.res.workspace, r.res.allRoots())
	if err != nil {
		return err
	}
	r.res.runDir = dir
	if r.lock, err = rundir.TakeLock(dir, r.now()); err != nil {
		return err
	}
	r.segment, r.segStart = 1, r.now().UTC()
	r.limits = loop.Limits{MaxTurns: r.opts.MaxTurns, Timeout: r.opts.Timeout, MaxTokens: r.opts.MaxTokens, MaxToolCallsPerTurn: r.opts.MaxToolCallsPerTurn}
	if err := r.openJournal(1, ""); err != nil {
		return err
	}
	r.manifest = record.Manifest{
		Envelope:       artifacts.NewEnvelope(record.TypeManifest, record.Version),
		RunID:          r.res.runID,
		HarnessVersion: r.opts.Version,
		Inputs:         inputsOf(r.opts, r.lin, r.res),
		Sources:        record.Sources{ConfigFile: r.opts.ConfigFile, Values: r.opts.Sources},
		Outputs:        outputsOf(r.opts.Outputs),
		Status:         outcome.StatusRunning,
		StartedAt:      r.now().UTC(),
		Usage:          record.UsageRecord{Turns: []loop.Usage{}},
		Artifacts:      []string{record.FileManifest, record.FileJournal},
		Segments:       []record.Segment{},
	}
	if r.manifest.Sources.Values == nil {
		r.manifest.Sources.Values = map[string]string{}
	}
	// run.json first: a run directory always has one, and a crash before
	// run.created leaves a run that resume declines (nothing ran).
	if err := r.writeManifest(); err != nil {
		return err
	}
	_, err = r.journal.Append(record.EventRunCreated, record.RunCreated{RunID: r.res.runID, Inputs: r.manifest.Inputs, Sources: r.manifest.Sources, Outputs: r.manifest.Outputs})
	return err
}

func (r *runner) openJournal(next int64, head artifacts.Digest) error {
	j, err := artifacts.OpenJournal(r.path(record.FileJournal), next)
	if err != nil {
		return err
	}
	j.SetClock(r.now)
	j.SetRedactor(r.redact)
	j.Continue(head, r.opts.RunKey)
	if on := r.opts.OnEvent; on != nil {
		depth := r.lin.depth
		j.Tee(func(line []byte) { on(line, depth) })
	}
	r.journal = j
	r.acts = tools.NewActivations(r.path(record.FileActivations), j, r.redact)
	return nil
}

func (r *runner) path(name string) string { return filepath.Join(r.res.runDir, name) }

// writeManifest writes run.json, sealed when the operator gave a run key.
func (r *runner) writeManifest() error {
	r.manifest.Seal = nil
	if len(r.opts.RunKey) > 0 {
		seal, err := rundir.Seal(r.manifest, r.opts.RunKey)
		if err != nil {
			return err
		}
		r.manifest.Seal = seal
	}
	return r.redact.WriteJSON(r.path(record.FileManifest), &r.manifest)
}

// event appends an event that no later step depends on directly; a
// failure is kept and fails the run at its end rather than passing
// unnoticed.
func (r *runner) event(typ string, data any) {
	if _, err := r.journal.Append(typ, data); err != nil && r.journalErr == nil {
		r.journalErr = err
	}
}

func (r *runner) progress(format string, args ...any) {
	// The values come from models, skills and providers: a control
	// character in one must not rewrite the line a person reads.
	for i, a := range args {
		switch v := a.(type) {
		case string:
			args[i] = termsafe.Escape(v)
		case error:
			args[i] = termsafe.Escape(v.Error())
		case fmt.Stringer:
			args[i] = termsafe.Escape(v.String())
		}
	}
	fmt.Fprint(r.stderr, r.redact.String(fmt.Sprintf("harness: "+format+"\n", args...)))
}
