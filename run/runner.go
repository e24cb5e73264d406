package run

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/harness-dev/harness/forge"
	"github.com/harness-dev/harness/gate"
	"github.com/harness-dev/harness/store"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/cfc"
	"github.com/harness-dev/harness/egress"
	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/mcp"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/rundir"
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
}

// runner carries one invocation's state from stage to stage. Run and
// Resume build it differently (from options, from a run directory) and
// then walk the same stages (stages.go).
type runner struct {
	// loopStarted says the prompt loop began (the model may have been
	// asked something).
	loopStarted bool
	// approvals decides which calls wait for a person; pendingApprovals
	// are those waiting when the run stopped.
	approvals        *gate.Approvals
	pendingApprovals []record.PendingApproval
	// mcp starts MCP servers and offers their tools (nil: none wanted).
	mcp      *tools.MCPHub
	opts     Options
	now      func() time.Time
	stderr   io.Writer
	res      resolved
	journal  *artifacts.Journal
	manifest record.Manifest
	registry *skills.Registry
	acts     *tools.Activations
	catalog  skills.Catalog
	token    string // frames skill context; see tools.BoundaryToken
	ws       *workspace.Workspace
	lock     *runLock

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

// Run executes one `harness run`. It returns a Result whenever a run
// directory was created (even for a refusal, which is then recorded there)
// and an error carrying the exit code whenever the run did not succeed.
func Run(ctx context.Context, opts Options) (*Result, error) {
	r := newRunner(opts.Now, opts.Stderr)
	r.opts = opts
	r.redact = artifacts.NewRedactor(opts.APIKey, string(opts.RunKey))
	if err := checkOptions(&r.opts); err != nil {
		return nil, err
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
	defer r.lock.release()
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

// checkOptions refuses what is wrong with the command line alone, before
// anything touches the disk.
func checkOptions(o *Options) error {
	if strings.TrimSpace(o.Prompt) == "" {
		return outcome.Usage("prompt_empty", "the prompt is empty: pass --prompt TEXT or --prompt-file FILE (- reads standard input)")
	}
	if len(o.Skills) > 0 && len(o.SkillsRoots)+len(o.ExternalSkillsRoots) == 0 {
		return outcome.Usage("skill_requires_root", "--skill requires --skills-root DIR: say where the skills live")
	}
	if o.Model == "" {
		return outcome.Usage("model_missing", "no model: pass --model NAME (or set HARNESS_MODEL)")
	}
	if o.Record != "" && o.Replay != "" {
		return outcome.Usage("cassette_conflict", "--record and --replay cannot be used together: record against a live model, replay offline")
	}
	// A keyless endpoint (a local vLLM, llama.cpp, Ollama) is named with
	// --base-url; only the default, OpenAI's, needs a key to be useful.
	if o.Replay == "" && o.APIKey == "" && o.model == nil && o.BaseURL == "" {
		return outcome.Usage("api_key_missing", "no API key: set HARNESS_API_KEY (or OPENAI_API_KEY) to call the model, pass --base-url URL for an endpoint that needs none, or pass --replay FILE to run offline from a recorded cassette")
	}
	if o.MaxTurns < 0 || o.MaxTokens < 0 || o.Timeout < 0 {
		return outcome.Usage("limit_invalid", "limits must not be negative (--max-turns, --max-tokens, --timeout)")
	}
	o.AllowSkillScripts = dedupe(o.AllowSkillScripts)
	if len(o.AllowSkillScripts) > 0 && len(o.SkillsRoots)+len(o.ExternalSkillsRoots) == 0 {
		return outcome.Usage("script_allow_requires_root", "--allow-skill-script requires --skills-root DIR")
	}
	for _, e := range o.AllowSkillScripts {
		if _, _, err := tools.ParseScriptAllow(e); err != nil {
			return err
		}
	}
	switch o.Sandbox {
	case "":
		o.Sandbox = "auto"
	case "auto", "bwrap", "landlock", "none":
	default:
		return outcome.Usage("sandbox_invalid", "--sandbox %q: use auto, bwrap, landlock or none", o.Sandbox)
	}
	if o.CFCMode == "" {
		o.CFCMode = string(cfc.ModeEnforceExplicit)
	}
	if _, ok := cfc.ParseMode(o.CFCMode); !ok {
		return outcome.Usage("cfc_mode_invalid", "--cfc-mode %q: use disabled, observe, enforce-explicit or enforce-strict", o.CFCMode)
	}
	if o.PromptRole == "" {
		o.PromptRole = string(cfc.RoleDirectCommand)
	}
	if _, ok := cfc.ParseRole(o.PromptRole); !ok {
		return outcome.Usage("prompt_role_invalid", "--prompt-role %q: use direct-command, context or quote", o.PromptRole)
	}
	o.TrustSkills = dedupe(o.TrustSkills)
	if o.maxDepth == 0 && o.depth == 0 {
		o.maxDepth = 1
	}
	if err := checkForge(o); err != nil {
		return err
	}
	if slices.Contains(o.AllowTools, tools.DelegateToolName) && o.Profiles == "" {
		return outcome.Usage("profiles_missing", "--allow-tool delegate_task needs --profiles FILE with the subagent profiles")
	}
	if o.Temperature != nil && (*o.Temperature < 0 || *o.Temperature > 2) {
		return outcome.Usage("temperature_invalid", "--temperature %v must be between 0 and 2", *o.Temperature)
	}
	if o.TopP != nil && (*o.TopP <= 0 || *o.TopP > 1) {
		return outcome.Usage("top_p_invalid", "--top-p %v must be more than 0 and at most 1", *o.TopP)
	}
	if o.MaxCompletionTokens < 0 {
		return outcome.Usage("max_completion_tokens_invalid", "--max-completion-tokens must not be negative")
	}
	if len(o.ExtraBody) == 0 {
		o.ExtraBody = nil
	}
	if len(o.ExtraBody) > 0 {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(o.ExtraBody, &obj); err != nil {
			return outcome.Usage("extra_body_invalid", "--extra-body must be a JSON object, e.g. '{\"top_k\": 20}': %v", err)
		}
		var buf bytes.Buffer
		json.Compact(&buf, o.ExtraBody)
		o.ExtraBody = buf.Bytes()
	}
	if o.SchemaRetries < 0 {
		return outcome.Usage("schema_retries_invalid", "--schema-retries must not be negative")
	}
	if len(o.OutputSchema) > 0 {
		var buf bytes.Buffer
		if err := json.Compact(&buf, o.OutputSchema); err != nil {
			return outcome.Usage("output_schema_invalid", "--output-schema is not JSON: %v", err)
		}
		o.OutputSchema = buf.Bytes()
		if _, err := loop.NewSchemaCheck(o.OutputSchema); err != nil {
			return outcome.Usage("output_schema_invalid", "--output-schema: %v", err)
		}
	}
	if o.CatalogBudget < 0 {
		return outcome.Usage("catalog_budget_invalid", "--catalog-budget must be a positive number of characters")
	}
	if o.BaseURL != "" {
		if err := checkBaseURL(o.BaseURL); err != nil {
			return err
		}
	}
	o.Skills = dedupe(o.Skills)
	o.AllowTools = dedupe(o.AllowTools)
	for _, t := range o.AllowTools {
		if strings.Contains(t, tools.MCPSeparator) {
			continue // an MCP server's tool: known once the server lists it
		}
		if !slices.Contains(tools.Names, t) {
			return outcome.Usage("tool_unknown", "--allow-tool %s: unknown tool; known tools: %s, and MCP tools as KEY__TOOL or KEY__*", t, strings.Join(tools.Names, ", "))
		}
	}
	if _, err := tools.ParseToolEffects(o.MCPToolEffects); err != nil {
		return err
	}
	for _, n := range o.PassEnv {
		if !mcp.IsEnvName(n) {
			return outcome.Usage("pass_env_invalid", "--pass-env %q: give an environment variable name", n)
		}
		if n == "HARNESS_API_KEY" || n == "OPENAI_API_KEY" || n == "HARNESS_RUN_KEY" {
			return outcome.Usage("pass_env_refused", "--pass-env %s: harness's own secrets are never passed to a server", n)
		}
	}
	o.AllowNetwork = dedupe(o.AllowNetwork)
	if _, err := egress.ParseRules(o.AllowNetwork); err != nil {
		return outcome.Usage("allow_network_invalid", "--allow-network: %v; give host or host:port (a name as the skill declares it, or an IP address)", err)
	}
	if o.operator = loadOperatorConfig(o.MCPConfig); o.operator != nil && o.operator.err != nil {
		return o.operator.err
	}
	if o.RunID != "" {
		if err := checkRunID(o.RunID); err != nil {
			return err
		}
	}
	return nil
}

func checkBaseURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return outcome.Usage("base_url_invalid", "--base-url %q must be an http(s) URL such as https://api.openai.com/v1", raw)
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
	external, err := resolveExternalRoots(ws, roots, r.opts.ExternalSkillsRoots)
	if err != nil {
		return err
	}
	id := r.opts.RunID
	if id == "" {
		id = newRunID(r.now())
	}
	atts, err := readAttachments(r.opts.Attach)
	if err != nil {
		return err
	}
	r.res = resolved{workspace: ws, cwd: cwd, skillsRoots: roots, externalRoots: external, runID: id, attachments: atts}
	if forgeAllowed(r.opts.AllowTools) && r.opts.ForgeRoot == "" && len(roots) > 0 {
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
	if r.opts.profilesFile == nil {
		data, err := artifacts.ReadFileAtMost(r.opts.Profiles, maxOperatorFile)
		if err != nil {
			return outcome.Usage("profiles_invalid", "--profiles %s: %v", r.opts.Profiles, err)
		}
		r.opts.profilesFile = data
	}
	ps, err := tools.ParseProfiles(r.opts.Profiles, r.opts.profilesFile, tools.Parent{AllowTools: r.opts.AllowTools, AllowSkillScripts: r.opts.AllowSkillScripts, Sandbox: r.opts.Sandbox})
	r.profiles = ps
	return err
}

// create makes the run directory and journal and writes the first
// manifest. From here on every refusal is recorded in the run directory.
func (r *runner) create() error {
	dir, err := createRunDir(r.opts.ArtifactsDir, r.res.runID, r.res.workspace)
	if err != nil {
		return err
	}
	r.res.runDir = dir
	if r.lock, err = lockRunDir(dir, r.now()); err != nil {
		return err
	}
	r.segment, r.segStart = 1, r.now().UTC()
	r.limits = loop.Limits{MaxTurns: r.opts.MaxTurns, Timeout: r.opts.Timeout, MaxTokens: r.opts.MaxTokens}
	if err := r.openJournal(1, ""); err != nil {
		return err
	}
	r.manifest = record.Manifest{
		Envelope:       artifacts.NewEnvelope(record.TypeManifest, record.Version),
		RunID:          r.res.runID,
		HarnessVersion: r.opts.Version,
		Inputs:         inputsOf(r.opts, r.res),
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
		depth := r.opts.depth
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
	fmt.Fprint(r.stderr, r.redact.String(fmt.Sprintf("harness: "+format+"\n", args...)))
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

// checkForge settles the SkillForge options when its tools are allowed:
// the approval tier, and absolute paths for the forge root and store.
func checkForge(o *Options) error {
	if !forgeAllowed(o.AllowTools) {
		if o.ReloadCreated {
			return outcome.Usage("reload_created_unused", "--reload-created needs --allow-tool create_skill or compose_skills")
		}
		return nil
	}
	if o.ApproveCreated == "" {
		o.ApproveCreated = "low"
	}
	if _, err := forge.ParseApproval(o.ApproveCreated); err != nil {
		return err
	}
	if o.ForgeRoot == "" && len(o.SkillsRoots) == 0 {
		return outcome.Usage("forge_root_missing", "--allow-tool create_skill needs a root for the skills it promotes: give --skills-root or --forge-root")
	}
	if o.SkillsStore == "" {
		o.SkillsStore = store.DefaultStoreDir
	}
	for _, p := range []*string{&o.ForgeRoot, &o.SkillsStore} {
		if *p == "" {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return outcome.Usage("forge_path_invalid", "%s: %v", *p, err)
		}
		*p = abs
	}
	return nil
}
