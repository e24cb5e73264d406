package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/cfc"
	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/skills"
)

// Result is what a finished (or refused) run reports to the CLI.
type Result struct {
	RunID    string
	RunDir   string
	Status   string
	ExitCode int
	Final    string
}

// runner carries one invocation's state from stage to stage.
type runner struct {
	opts     Options
	now      func() time.Time
	res      resolved
	journal  *artifacts.Journal
	manifest Manifest
	registry *skills.Registry
	acts     *activationLog
	catalog  skills.Catalog
	token    string // frames skill context; see boundaryToken
	ws       *Workspace
	stdout   io.Writer
	stderr   io.Writer

	lock        *runLock
	segment     int           // 1 for the first run, then one more per resume
	segStart    time.Time     // when this segment started
	start       loop.Progress // what earlier segments used
	limits      loop.Limits   // this segment's effective limits
	profiles    []Profile
	sharedModel loop.Model // the model, handed to subagents
	gate        *policyGate
	critical    map[string][]string // skill -> critical content-scan rules
	findings    []PolicyFinding
	preloaded   map[string]string // preloaded skill -> its text, labelled context
	// driftRefused marks a resume refused for drift: the run stays
	// resumable (with --allow-drift, or once the drift is undone).
	driftRefused bool
}

// Run executes one `harness run`. It returns a Result whenever a run
// directory was created (even for a refusal, which is then recorded there)
// and an error carrying the exit code whenever the run did not succeed.
func Run(ctx context.Context, opts Options) (*Result, error) {
	r := &runner{opts: opts, now: opts.Now, stdout: opts.Stdout, stderr: opts.Stderr}
	if r.now == nil {
		r.now = time.Now
	}
	if r.stdout == nil {
		r.stdout = io.Discard
	}
	if r.stderr == nil || opts.Quiet {
		r.stderr = io.Discard
	}
	if err := checkOptions(&r.opts); err != nil {
		return nil, err
	}
	if err := r.resolve(); err != nil {
		return nil, err
	}
	if r.opts.Profiles != "" {
		ps, err := loadProfiles(r.opts.Profiles, r.opts)
		if err != nil {
			return nil, err
		}
		r.profiles = ps
	}
	if err := r.open(); err != nil {
		return nil, err
	}
	defer r.lock.release()
	defer r.journal.Close()
	res, err := r.execute(ctx)
	return res, err
}

// checkOptions refuses what is wrong with the command line alone, before
// anything touches the disk.
func checkOptions(o *Options) error {
	if strings.TrimSpace(o.Prompt) == "" {
		return usageErr("prompt_empty", "the prompt is empty: pass --prompt TEXT or --prompt-file FILE (- reads standard input)")
	}
	if len(o.Skills) > 0 && len(o.SkillsRoots) == 0 {
		return usageErr("skill_requires_root", "--skill requires --skills-root DIR: say where the skills live")
	}
	if o.Model == "" {
		return usageErr("model_missing", "no model: pass --model NAME (or set HARNESS_MODEL)")
	}
	if o.Record != "" && o.Replay != "" {
		return usageErr("cassette_conflict", "--record and --replay cannot be used together: record against a live model, replay offline")
	}
	if o.Replay == "" && o.APIKey == "" && o.model == nil {
		return usageErr("api_key_missing", "no API key: set HARNESS_API_KEY (or OPENAI_API_KEY) to call the model, or pass --replay FILE to run offline from a recorded cassette")
	}
	if o.MaxTurns < 0 || o.MaxTokens < 0 || o.Timeout < 0 {
		return usageErr("limit_invalid", "limits must not be negative (--max-turns, --max-tokens, --timeout)")
	}
	o.AllowSkillScripts = dedupe(o.AllowSkillScripts)
	if len(o.AllowSkillScripts) > 0 && len(o.SkillsRoots) == 0 {
		return usageErr("script_allow_requires_root", "--allow-skill-script requires --skills-root DIR")
	}
	for _, e := range o.AllowSkillScripts {
		if _, _, err := parseScriptAllow(e); err != nil {
			return err
		}
	}
	switch o.Sandbox {
	case "":
		o.Sandbox = "auto"
	case "auto", "bwrap", "landlock", "none":
	default:
		return usageErr("sandbox_invalid", "--sandbox %q: use auto, bwrap, landlock or none", o.Sandbox)
	}
	if o.CFCMode == "" {
		o.CFCMode = string(cfc.ModeEnforceExplicit)
	}
	if _, ok := cfc.ParseMode(o.CFCMode); !ok {
		return usageErr("cfc_mode_invalid", "--cfc-mode %q: use disabled, observe, enforce-explicit or enforce-strict", o.CFCMode)
	}
	if o.PromptRole == "" {
		o.PromptRole = string(cfc.RoleDirectCommand)
	}
	if _, ok := cfc.ParseRole(o.PromptRole); !ok {
		return usageErr("prompt_role_invalid", "--prompt-role %q: use direct-command, context or quote", o.PromptRole)
	}
	o.TrustSkills = dedupe(o.TrustSkills)
	if o.maxDepth == 0 && o.depth == 0 {
		o.maxDepth = 1
	}
	if slices.Contains(o.AllowTools, delegateToolName) && o.Profiles == "" {
		return usageErr("profiles_missing", "--allow-tool delegate_task needs --profiles FILE with the subagent profiles")
	}
	if o.CatalogBudget < 0 {
		return usageErr("catalog_budget_invalid", "--catalog-budget must be a positive number of characters")
	}
	if o.BaseURL != "" {
		u, err := url.Parse(o.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usageErr("base_url_invalid", "--base-url %q must be an http(s) URL such as https://api.openai.com/v1", o.BaseURL)
		}
	}
	o.Skills = dedupe(o.Skills)
	o.AllowTools = dedupe(o.AllowTools)
	for _, t := range o.AllowTools {
		if !slices.Contains(knownTools, t) {
			return usageErr("tool_unknown", "--allow-tool %s: unknown tool; known tools: %s", t, strings.Join(knownTools, ", "))
		}
	}
	if o.RunID != "" {
		if err := checkRunID(o.RunID); err != nil {
			return err
		}
	}
	return nil
}

func dedupe(xs []string) []string {
	var out []string
	for _, x := range xs {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

func (r *runner) resolve() error {
	ws, err := resolveWorkspace(r.opts.Workspace)
	if err != nil {
		return err
	}
	cwd, err := resolveCwd(ws, r.opts.Cwd)
	if err != nil {
		return err
	}
	roots, err := resolveSkillsRoots(ws, r.opts.SkillsRoots)
	if err != nil {
		return err
	}
	id := r.opts.RunID
	if id == "" {
		id = newRunID(r.now())
	}
	r.res = resolved{workspace: ws, cwd: cwd, skillsRoots: roots, runID: id}
	return nil
}

// open creates the run directory and journal and writes the first manifest.
// From here on every refusal is recorded in the run directory.
func (r *runner) open() error {
	dir, err := createRunDir(r.opts.ArtifactsDir, r.res.runID)
	if err != nil {
		return err
	}
	r.res.runDir = dir
	if r.lock, err = lockRunDir(dir, r.now()); err != nil {
		return err
	}
	r.segment, r.segStart = 1, r.now().UTC()
	r.limits = loop.Limits{MaxTurns: r.opts.MaxTurns, Timeout: r.opts.Timeout, MaxTokens: r.opts.MaxTokens}
	j, err := artifacts.OpenJournal(filepath.Join(dir, fileJournal), 1)
	if err != nil {
		return err
	}
	j.SetClock(r.now)
	j.Tee(r.onEvent)
	r.journal = j
	r.acts = newActivationLog(r.path(fileActivations), j)
	r.manifest = r.newManifest()
	return artifacts.WriteJSON(r.path(fileManifest), &r.manifest)
}

func (r *runner) path(name string) string { return filepath.Join(r.res.runDir, name) }

func (r *runner) newManifest() Manifest {
	o := r.opts
	roots := make([]PathPair, len(r.res.skillsRoots))
	for i, root := range r.res.skillsRoots {
		roots[i] = PathPair{Host: root, Sandbox: sandboxPath(r.res.workspace, root)}
	}
	artifactsDir := filepath.Dir(r.res.runDir)
	m := Manifest{
		Envelope:       artifacts.NewEnvelope("harness.run", 1),
		RunID:          r.res.runID,
		HarnessVersion: o.Version,
		Inputs: Inputs{
			Workspace:     PathPair{Host: r.res.workspace, Sandbox: SandboxWorkspace},
			Cwd:           r.res.cwd,
			SkillsRoots:   roots,
			Skills:        nonNil(o.Skills),
			Model:         o.Model,
			BaseURL:       redactURL(o.BaseURL),
			PromptSource:  o.PromptSource,
			PromptDigest:  artifacts.DigestString(o.Prompt),
			PromptRole:    "direct-command",
			AllowTools:    nonNil(o.AllowTools),
			AllowScripts:  nonNil(o.AllowSkillScripts),
			NoCatalog:     o.NoSkillCatalog,
			CatalogBudget: o.CatalogBudget,
			AllowDrift:    o.AllowDrift,
			Profiles:      absOrEmpty(o.Profiles), Depth: o.depth, MaxDepth: o.maxDepth, ActivationSource: o.activationSource,
			CFC: CFCRecord{Mode: o.CFCMode, FailOnDenial: o.FailOnDenial, AllowUnmediated: o.AllowUnmediated,
				HonorAllowedTools: o.HonorAllowedTools, TrustSkills: nonNil(o.TrustSkills)},
			Tools:        []string{},
			Limits:       limitsRecord(o),
			Record:       o.Record,
			Replay:       o.Replay,
			ArtifactsDir: artifactsDir,
		},
		Sources:   Sources{ConfigFile: o.ConfigFile, Values: o.Sources},
		Status:    StatusRunning,
		StartedAt: r.now().UTC(),
		Usage:     UsageRecord{Turns: []loop.Usage{}},
		Artifacts: []string{fileManifest, fileJournal},
		Segments:  []Segment{},
	}
	if m.Sources.Values == nil {
		m.Sources.Values = map[string]string{}
	}
	return m
}

func nonNil(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return xs
}

func limitsRecord(o Options) LimitsRecord {
	l := LimitsRecord{MaxTurns: o.MaxTurns, MaxTokens: o.MaxTokens}
	if o.Timeout > 0 {
		l.Timeout = o.Timeout.String()
	}
	return l
}

// redactURL drops credentials and query strings from a base URL before it
// is written anywhere: some gateways carry keys there.
func redactURL(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	u.User = nil
	u.RawQuery = ""
	u.Fragment = ""
	return u.String()
}

// execute runs the stages after the run directory exists and records how
// the run ended, whatever happened.
func (r *runner) execute(ctx context.Context) (*Result, error) {
	outcome, err := r.stages(ctx)
	if err != nil {
		return r.finish(outcome, err)
	}
	return r.finish(outcome, outcomeError(outcome))
}

func (r *runner) stages(ctx context.Context) (*loop.Outcome, error) {
	if err := r.snapshot(ctx); err != nil {
		return nil, err
	}
	if r.opts.afterSnapshot != nil {
		r.opts.afterSnapshot()
	}
	history, err := r.preload()
	if err != nil {
		return nil, err
	}
	model, tools, closeAll, err := r.modelAndTools(ctx)
	if err != nil {
		return nil, err
	}
	defer closeAll()
	if err := r.seal(tools); err != nil {
		return nil, err
	}
	r.gate = r.newGate(r.preloaded)
	if err := r.writePolicySnapshot(r.gate); err != nil {
		return nil, err
	}
	if err := r.started(history); err != nil {
		return nil, err
	}
	r.progress("run %s: model %s, %d tools, %d skills preloaded", r.res.runID, r.opts.Model, len(tools), r.acts.count())
	out := loop.Run(ctx, loop.Config{
		Model:         model,
		ModelName:     r.opts.Model,
		Tools:         tools,
		Limits:        r.limits,
		Journal:       r.journal,
		ToolOutputDir: r.path(dirToolOutputs),
		Start:         r.start,
		Gate:          r.gate,
	}, history)
	return &out, nil
}

// started records the seeded conversation: from here on the journal alone
// can rebuild the run.
func (r *runner) started(history []loop.Message) error {
	_, err := r.journal.Append("run.started", runStarted{
		RunID:    r.res.runID,
		Identity: r.manifest.Identity.Digest,
		Model:    r.opts.Model,
		Tools:    r.manifest.Inputs.Tools,
		Messages: history,
		Token:    r.token,
	})
	return err
}

// runStarted is the data of the run.started event. Messages is the seeded
// conversation (system prompt, skill context, task), from which resume
// rebuilds the context together with later events.
type runStarted struct {
	RunID    string           `json:"runId"`
	Identity artifacts.Digest `json:"identity"`
	Model    string           `json:"model"`
	Tools    []string         `json:"tools"`
	Messages []loop.Message   `json:"messages"`
	// Token frames skill context; resume needs it to frame skills loaded
	// later the same way.
	Token string `json:"token,omitempty"`
}

// runFinished is the data of the run.finished event.
type runFinished struct {
	Segment   int          `json:"segment"`
	Status    string       `json:"status"`
	ExitCode  int          `json:"exitCode"`
	Reason    string       `json:"reason,omitempty"`
	Resumable bool         `json:"resumable"`
	Error     *ErrorRecord `json:"error,omitempty"`
}

// snapshot scans the skill roots and writes skill-registry.json.
func (r *runner) snapshot(ctx context.Context) error {
	if len(r.res.skillsRoots) == 0 {
		return nil
	}
	reg, err := skills.Scan(ctx, skills.ScanOptions{
		Roots:            r.res.skillsRoots,
		Workspace:        r.res.workspace,
		SandboxWorkspace: SandboxWorkspace,
		Now:              r.now,
	})
	if err != nil {
		return &Error{Code: "registry_scan_failed", Msg: fmt.Sprintf("scan skills: %v", err), Exit: ExitUsage, Err: err}
	}
	r.registry = reg
	if !r.opts.NoSkillCatalog {
		r.catalog = skills.BuildCatalog(reg, r.opts.CatalogBudget)
		reg.Diagnostics = append(reg.Diagnostics, r.catalog.Diagnostics()...)
	}
	r.scanSkills(reg)
	if err := artifacts.WriteJSON(r.path(fileRegistry), reg); err != nil {
		return err
	}
	r.manifest.Artifacts = append(r.manifest.Artifacts, fileRegistry)
	_, err = r.journal.Append("registry.snapshotted", struct {
		Digest      artifacts.Digest `json:"digest"`
		Skills      int              `json:"skills"`
		Diagnostics int              `json:"diagnostics"`
	}{reg.Digest, len(reg.Skills), len(reg.Diagnostics)})
	if err != nil {
		return err
	}
	for _, st := range r.catalog.Steps {
		if _, err := r.journal.Append("catalog.truncated", st); err != nil {
			return err
		}
	}
	for _, f := range r.findings {
		if _, err := r.journal.Append("content.flagged", f); err != nil {
			return err
		}
	}
	return nil
}

// preload reads each --skill at its snapshot digest and seeds the
// conversation: system prompt, skill context blocks, then the task.
func (r *runner) preload() ([]loop.Message, error) {
	var missing []string
	var chosen []*skills.Skill
	for _, name := range r.opts.Skills {
		s, ok := r.registry.Lookup(name)
		if !ok {
			missing = append(missing, name)
			continue
		}
		chosen = append(chosen, s)
	}
	if len(missing) > 0 && r.opts.lenientSkills {
		// A profile's skills are a wish list: what the registry lacks is
		// skipped and said, not fatal.
		for _, name := range missing {
			r.journal.Append("skill.skipped", map[string]string{"name": name, "reason": "not in the registry"})
			r.progress("profile skill %s not found; skipped", name)
		}
		missing = nil
	}
	if len(missing) > 0 {
		avail := r.registry.Available()
		list := "none"
		if len(avail) > 0 {
			list = strings.Join(avail, ", ")
		}
		return nil, usageErr("skill_not_found", "skill not found: %s; available skills: %s", strings.Join(missing, ", "), list)
	}
	contents := make([][]byte, len(chosen))
	texts := []string{r.opts.Prompt}
	for i, s := range chosen {
		b, err := skills.ReadSkillFile(s)
		if err != nil {
			var ref *skills.Refusal
			if errors.As(err, &ref) {
				return nil, policyErr(ref.Code, "preload %s: %s", s.Name, ref.Msg)
			}
			return nil, policyErr("skill_unreadable", "preload %s: %v", s.Name, err)
		}
		if !s.IsEligible() && !r.opts.SkipEligibility {
			return nil, usageErr("skill_ineligible", "skill %s cannot run on this machine: %s; fix: %s (or pass --skip-eligibility)", s.Name, describeMissing(s.Missing), describeHints(s.InstallHints))
		}
		if rules, bad := r.untrusted(s.Name); bad {
			return nil, policyErr("skill_untrusted", "preload %s: critical content findings (%s) and --cfc-mode enforce-strict: review the skill, then pass --trust-skill %s to vouch for it", s.Name, strings.Join(rules, ", "), s.Name)
		}
		contents[i] = b
		texts = append(texts, string(b))
		if r.preloaded == nil {
			r.preloaded = map[string]string{}
		}
		r.preloaded[s.Name] = string(b)
	}
	history := []loop.Message{{Role: loop.RoleSystem, Content: systemPrompt}}
	if r.registry != nil {
		r.token = boundaryToken(string(r.registry.Digest)+"\x00"+r.opts.Prompt, texts)
	}
	for i, s := range chosen {
		history = append(history, loop.Message{Role: loop.RoleUser, Content: skillContextBlock(r.token, s, contents[i], "preloaded by the operator for this run")})
		if err := r.acts.add(Activation{
			Name:          s.Name,
			Source:        r.preloadSource(),
			RunID:         r.res.runID,
			SkillPath:     s.SkillPath,
			SandboxPath:   s.SandboxSkillPath,
			Digest:        s.Digest,
			ActivatedAt:   r.now().UTC(),
			CFCPromptRole: "context",
		}); err != nil {
			return nil, err
		}
	}
	if r.registry != nil {
		if err := r.acts.write(); err != nil {
			return nil, err
		}
		r.manifest.Artifacts = append(r.manifest.Artifacts, fileActivations)
	}
	history = append(history, loop.Message{Role: loop.RoleUser, Content: taskMessage(r.opts.Prompt, r.res.cwd)})
	return history, nil
}

// seal computes the run identity and records the tool manifest.
func (r *runner) seal(tools []loop.Tool) error {
	specs := make([]loop.ToolSpec, len(tools))
	effects := make([]loop.Effect, len(tools))
	names := make([]string, len(tools))
	for i, t := range tools {
		specs[i], effects[i], names[i] = t.Spec(), t.Effect(), t.Spec().Name
	}
	td, err := toolsDigest(specs, effects)
	if err != nil {
		return err
	}
	id := Identity{
		HarnessVersion: r.opts.Version,
		Model:          r.opts.Model,
		PromptDigest:   artifacts.DigestString(r.opts.Prompt),
		PromptRole:     r.manifest.Inputs.PromptRole,
		ToolsDigest:    td,
		PolicyDigest:   policyDigest(r.opts),
		Limits:         r.manifest.Inputs.Limits,
		Skills:         nonNil(r.opts.Skills),
		SkillDigests:   []artifacts.Digest{},
	}
	if r.registry != nil {
		id.RegistryDigest = r.registry.Digest
	}
	id.SkillDigests = r.acts.digests()
	if err := id.seal(); err != nil {
		return err
	}
	r.manifest.Identity = id
	r.manifest.Inputs.Tools = names
	return artifacts.WriteJSON(r.path(fileManifest), &r.manifest)
}

// outcomeError maps how the loop ended to the run's error (nil = success).
func outcomeError(o *loop.Outcome) error {
	switch o.Reason {
	case loop.ReasonCompleted:
		return nil
	case loop.ReasonLimitTurns, loop.ReasonLimitTokens, loop.ReasonLimitTimeout:
		return &Error{Code: strings.ReplaceAll(string(o.Reason), ".", "_"), Msg: limitMessage(o.Reason), Exit: ExitLimit, Err: o.Err}
	case loop.ReasonInterrupted:
		return &Error{Code: "interrupted", Msg: "interrupted: the run stopped at a safe point; continue it with `harness resume`", Exit: ExitInterrupted, Err: o.Err}
	case loop.ReasonPolicyDenied:
		return &Error{Code: "policy_denied", Msg: "a tool call was denied by the CFC policy and --fail-on-denial ends the run; see policy-trace.json", Exit: ExitPolicy, Err: o.Err}
	case loop.ReasonProviderError:
		msg := "model provider error"
		if o.Err != nil {
			msg = o.Err.Error()
		}
		return &Error{Code: "provider_error", Msg: msg, Exit: ExitProvider, Err: o.Err}
	default:
		msg := "the run failed"
		if o.Err != nil {
			msg = o.Err.Error()
		}
		return &Error{Code: "run_failed", Msg: msg, Exit: ExitFailed, Err: o.Err}
	}
}

func limitMessage(reason loop.Reason) string {
	switch reason {
	case loop.ReasonLimitTurns:
		return "turn limit reached (--max-turns): raise it and continue with `harness resume`"
	case loop.ReasonLimitTokens:
		return "token limit reached (--max-tokens): raise it and continue with `harness resume`"
	default:
		return "time limit reached (--timeout): continue with `harness resume`"
	}
}

// finish writes the final manifest and the run.finished event. It is the
// single place a run's status and exit code are decided.
func (r *runner) finish(o *loop.Outcome, runErr error) (*Result, error) {
	status, exit, resumable := StatusSucceeded, ExitOK, false
	var rec *ErrorRecord
	if runErr != nil {
		e := AsError(runErr)
		exit = e.Exit
		rec = &ErrorRecord{Code: e.Code, Message: e.Error()}
		switch exit {
		case ExitLimit:
			status, resumable = StatusLimit, true
		case ExitProvider:
			status, resumable = StatusProvider, true
		case ExitInterrupted:
			status, resumable = StatusInterrupted, true
		case ExitUsage, ExitPolicy:
			status = StatusRefused
			resumable = r.driftRefused
		default:
			status = StatusFailed
		}
		runErr = e
	}
	m := &r.manifest
	m.Status, m.ExitCode, m.Resumable, m.Error = status, exit, resumable, rec
	if o != nil {
		m.Reason = string(o.Reason)
		m.Turns = o.Turns
		m.Usage = UsageRecord{Total: o.Usage, Turns: o.TurnUsage}
		if m.Usage.Turns == nil {
			m.Usage.Turns = []loop.Usage{}
		}
		if o.Reason == loop.ReasonCompleted {
			m.Final = &FinalMessage{Content: o.Final.Content}
		}
	}
	fin := r.now().UTC()
	m.FinishedAt = &fin
	seg := Segment{Segment: r.segment, StartedAt: r.segStart, FinishedAt: &fin, Status: status, ExitCode: exit, Reason: m.Reason,
		Limits: limitsRecord(Options{MaxTurns: r.limits.MaxTurns, Timeout: r.limits.Timeout, MaxTokens: r.limits.MaxTokens})}
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
	m.Artifacts = append(m.Artifacts, dirToolOutputs+"/")
	if r.gate != nil {
		r.writePolicySnapshot(r.gate)
		r.gate.writeTrace()
	}
	for _, f := range []string{fileResourceReads, fileScriptExecutions, filePolicySnapshot, filePolicyTrace} {
		if _, err := os.Stat(r.path(f)); err == nil {
			m.Artifacts = append(m.Artifacts, f)
		}
	}
	slices.Sort(m.Artifacts)
	m.Artifacts = slices.Compact(m.Artifacts)
	_, jerr := r.journal.Append("run.finished", runFinished{Segment: r.segment, Status: status, ExitCode: exit, Reason: m.Reason, Resumable: resumable, Error: rec})
	werr := artifacts.WriteJSON(r.path(fileManifest), m)
	res := &Result{RunID: r.res.runID, RunDir: r.res.runDir, Status: status, ExitCode: exit}
	if m.Final != nil {
		res.Final = m.Final.Content
	}
	if err := errors.Join(jerr, werr); err != nil && runErr == nil {
		return res, &Error{Code: "artifact_write_failed", Msg: err.Error(), Exit: ExitFailed, Err: err}
	}
	return res, runErr
}

// onEvent receives every journal line once it is durable: it streams the
// line for --json and prints human progress on stderr.
func (r *runner) onEvent(line []byte) {
	if r.opts.JSON {
		r.stdout.Write(line)
		r.stdout.Write([]byte("\n"))
	}
	var ev struct {
		Type string          `json:"type"`
		Data json.RawMessage `json:"data"`
	}
	if json.Unmarshal(line, &ev) != nil {
		return
	}
	switch ev.Type {
	case "tool.started":
		var d struct {
			Turn int    `json:"turn"`
			Tool string `json:"tool"`
		}
		json.Unmarshal(ev.Data, &d)
		r.progress("turn %d: %s", d.Turn, d.Tool)
	case "tool.finished":
		var d struct {
			Tool   string `json:"tool"`
			Status string `json:"status"`
		}
		json.Unmarshal(ev.Data, &d)
		if d.Status != loop.StatusOK {
			r.progress("  %s: %s", d.Tool, d.Status)
		}
	case "limit.reached":
		var d struct {
			Limit string `json:"limit"`
		}
		json.Unmarshal(ev.Data, &d)
		r.progress("limit reached: %s", d.Limit)
	}
}

func (r *runner) progress(format string, args ...any) {
	fmt.Fprintf(r.stderr, "harness: "+format+"\n", args...)
}

// policyDigest covers what the operator allowed: tools, scripts, the
// sandbox asked for and whether drift is accepted.
func policyDigest(o Options) artifacts.Digest {
	h := artifacts.NewHasher()
	h.WriteField("harness.policy/1")
	for _, t := range o.AllowTools {
		h.WriteField("tool:" + t)
	}
	for _, s := range o.AllowSkillScripts {
		h.WriteField("script:" + s)
	}
	h.WriteField("sandbox:" + o.Sandbox)
	h.WriteField("cfc:" + o.CFCMode)
	h.WriteField(fmt.Sprint("cfc-flags:", o.FailOnDenial, o.AllowUnmediated, o.HonorAllowedTools))
	for _, s := range o.TrustSkills {
		h.WriteField("trust:" + s)
	}
	h.WriteField(fmt.Sprint("drift:", o.AllowDrift))
	return h.Digest()
}

// describeMissing says what a skill lacks, for people.
func describeMissing(m *skills.Missing) string {
	if m == nil {
		return "nothing"
	}
	var parts []string
	if len(m.Bins) > 0 {
		parts = append(parts, "programs "+strings.Join(m.Bins, ", ")+" not on PATH")
	}
	if len(m.AnyBins) > 0 {
		parts = append(parts, "none of "+strings.Join(m.AnyBins, ", ")+" on PATH")
	}
	if len(m.Env) > 0 {
		parts = append(parts, "environment variables "+strings.Join(m.Env, ", ")+" unset or empty")
	}
	if len(m.OS) > 0 {
		parts = append(parts, "needs OS "+strings.Join(m.OS, " or "))
	}
	return strings.Join(parts, "; ")
}

func describeHints(h []string) string {
	if len(h) == 0 {
		return "install what is missing"
	}
	return strings.Join(h, "; ")
}

func (r *runner) preloadSource() string {
	if r.opts.activationSource != "" {
		return r.opts.activationSource
	}
	return SourceCLIPreload
}

// modelAndTools builds the model, then the tools (delegate_task hands the
// model to subagents), and one function that releases both.
func (r *runner) modelAndTools(ctx context.Context) (loop.Model, []loop.Tool, func(), error) {
	model, closeModel, err := r.model()
	if err != nil {
		return nil, nil, nil, err
	}
	r.sharedModel = model
	tools, closeTools, err := r.tools(ctx)
	if err != nil {
		closeModel()
		return nil, nil, nil, err
	}
	return model, tools, func() { closeTools(); closeModel() }, nil
}
