package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/skills"
)

const fileDrift = "drift-report.json"

// ResumeOptions are what `harness resume` may set. Everything else is
// the run's recorded inputs: a resume continues the same run.
type ResumeOptions struct {
	RunDir     string
	AllowDrift bool
	// MaxTurns is "" (keep the recorded limit), "N" (at most N turns in
	// all) or "+N" (N more turns than already used).
	MaxTurns  string
	Timeout   time.Duration // wall clock for this segment; 0 = none
	MaxTokens int64         // 0 = keep the recorded limit
	JSON      bool
	Quiet     bool
	Record    string
	Replay    string
	APIKey    string
	Stdout    io.Writer
	Stderr    io.Writer
	Now       func() time.Time
	Version   string

	model loop.Model // a subagent's parent's model
}

// DriftReport is drift-report.json: what changed between the run's
// start and a resume.
type DriftReport struct {
	artifacts.Envelope
	Segment   int             `json:"segment"`
	CheckedAt time.Time       `json:"checkedAt"`
	Drift     bool            `json:"drift"`
	Allowed   bool            `json:"allowed"`
	Identity  []DriftItem     `json:"identity"`
	Skills    SkillDrift      `json:"skills"`
	Resources []ResourceDrift `json:"resources"`
}

// DriftItem is one identity field that differs.
type DriftItem struct {
	Field    string `json:"field"`
	Recorded string `json:"recorded"`
	Current  string `json:"current"`
}

// SkillDrift lists skills added, removed or changed (SKILL.md or tree).
type SkillDrift struct {
	Added   []string `json:"added"`
	Removed []string `json:"removed"`
	Changed []string `json:"changed"`
}

// ResourceDrift is a changed file of an active skill or allowed script.
type ResourceDrift struct {
	Skill    string           `json:"skill"`
	Path     string           `json:"path"`
	Change   string           `json:"change"` // changed | removed | added
	Recorded artifacts.Digest `json:"recorded,omitempty"`
	Current  artifacts.Digest `json:"current,omitempty"`
}

func (d *DriftReport) any() bool {
	return len(d.Identity)+len(d.Skills.Added)+len(d.Skills.Removed)+len(d.Skills.Changed)+len(d.Resources) > 0
}

// journalState is the run rebuilt from its journal.
type journalState struct {
	started   bool
	token     string
	messages  []loop.Message
	progress  loop.Progress
	toolOrder []loop.ToolStartedEvent
	finished  map[string]bool
	lastSeq   int64
	resumes   int
	tornBytes int
}

// Resume continues a run that stopped (limit, provider error, interrupt,
// crash) from its journal, after checking that nothing it depends on
// drifted.
func Resume(ctx context.Context, ro ResumeOptions) (*Result, error) {
	r := &runner{now: ro.Now, stdout: ro.Stdout, stderr: ro.Stderr}
	if r.now == nil {
		r.now = time.Now
	}
	if r.stdout == nil {
		r.stdout = io.Discard
	}
	if r.stderr == nil || ro.Quiet {
		r.stderr = io.Discard
	}
	dir, err := filepath.Abs(ro.RunDir)
	if err != nil {
		return nil, usageErr("run_dir_invalid", "%s: %v", ro.RunDir, err)
	}
	var m Manifest
	if err := artifacts.ReadJSON(filepath.Join(dir, fileManifest), "harness.run", 1, &m); err != nil {
		return nil, usageErr("run_dir_invalid", "%s is not a run directory (no readable run.json): %v", ro.RunDir, err)
	}
	if m.Status == StatusSucceeded {
		return nil, usageErr("run_succeeded", "run %s already succeeded; there is nothing to resume", m.RunID)
	}
	if ro.Replay == "" && ro.APIKey == "" && ro.model == nil {
		return nil, usageErr("api_key_missing", "no API key: set HARNESS_API_KEY (or OPENAI_API_KEY) to call the model, or pass --replay FILE to continue offline from a cassette")
	}
	if ro.Record != "" && ro.Replay != "" {
		return nil, usageErr("cassette_conflict", "--record and --replay cannot be used together")
	}
	r.manifest = m
	r.opts = optionsFromManifest(m, ro)
	roots := make([]string, len(m.Inputs.SkillsRoots))
	for i, p := range m.Inputs.SkillsRoots {
		roots[i] = p.Host
	}
	r.res = resolved{workspace: m.Inputs.Workspace.Host, cwd: m.Inputs.Cwd, skillsRoots: roots, runDir: dir, runID: m.RunID}
	if r.opts.Profiles != "" {
		ps, err := loadProfiles(r.opts.Profiles, r.opts)
		if err != nil {
			return nil, err
		}
		r.profiles = ps
	}
	if r.lock, err = lockRunDir(dir, r.now()); err != nil {
		return nil, err
	}
	defer r.lock.release()

	st, err := readJournalState(dir)
	if err != nil {
		return nil, err
	}
	j, err := artifacts.OpenJournal(r.path(fileJournal), st.lastSeq+1)
	if err != nil {
		return nil, err
	}
	j.SetClock(r.now)
	j.Tee(r.onEvent)
	r.journal = j
	defer j.Close()
	r.segment, r.segStart = max(len(m.Segments), st.resumes+1)+1, r.now().UTC()
	r.start, r.token = st.progress, st.token
	if r.limits, err = resumeLimits(m, ro, st.progress.Turns); err != nil {
		return nil, err
	}
	return r.resume(ctx, st, ro)
}

func optionsFromManifest(m Manifest, ro ResumeOptions) Options {
	in := m.Inputs
	roots := make([]string, len(in.SkillsRoots))
	for i, p := range in.SkillsRoots {
		roots[i] = p.Host
	}
	return Options{
		Workspace: in.Workspace.Host, Cwd: in.Cwd, SkillsRoots: roots, Skills: in.Skills,
		Model: in.Model, BaseURL: in.BaseURL, APIKey: ro.APIKey, AllowTools: in.AllowTools,
		AllowSkillScripts: in.AllowScripts, Sandbox: sandboxRequested(in), NoSkillCatalog: in.NoCatalog,
		CatalogBudget: in.CatalogBudget, AllowDrift: in.AllowDrift,
		Record: ro.Record, Replay: ro.Replay, JSON: ro.JSON, Quiet: ro.Quiet,
		Stdout: ro.Stdout, Stderr: ro.Stderr, Now: ro.Now, Version: ro.Version, model: ro.model,
		Profiles: in.Profiles, depth: in.Depth, maxDepth: in.MaxDepth, activationSource: in.ActivationSource,
		PromptSource: in.PromptSource, Prompt: in.Prompt, PromptRole: in.PromptRole,
		CFCMode: in.CFC.Mode, FailOnDenial: in.CFC.FailOnDenial, AllowUnmediated: in.CFC.AllowUnmediated,
		HonorAllowedTools: in.CFC.HonorAllowedTools, TrustSkills: in.CFC.TrustSkills,
	}
}

func sandboxRequested(in Inputs) string {
	if in.Sandbox != nil {
		return in.Sandbox.Requested
	}
	return "auto"
}

// resumeLimits applies the limits given on resume: a raised limit counts
// the whole run, "+N" counts from the turns already used.
func resumeLimits(m Manifest, ro ResumeOptions, used int) (loop.Limits, error) {
	l := loop.Limits{MaxTurns: m.Inputs.Limits.MaxTurns, MaxTokens: m.Inputs.Limits.MaxTokens, Timeout: ro.Timeout}
	if t := ro.MaxTurns; t != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(t, "+"))
		if err != nil || n < 0 {
			return l, usageErr("limit_invalid", "--max-turns %q must be N or +N", t)
		}
		if strings.HasPrefix(t, "+") {
			n += used
		}
		l.MaxTurns = n
	}
	if ro.MaxTokens > 0 {
		l.MaxTokens = ro.MaxTokens
	}
	return l, nil
}

// readJournalState rebuilds the conversation and progress from the
// journal. A torn last line (a crash mid-write) is cut off; damage before
// the end refuses the resume.
func readJournalState(dir string) (*journalState, error) {
	p := filepath.Join(dir, fileJournal)
	f, err := os.Open(p)
	if err != nil {
		return nil, usageErr("run_dir_invalid", "%s has no journal: %v", dir, err)
	}
	c, err := artifacts.ReadJournal(f)
	f.Close()
	if err != nil {
		if errors.Is(err, artifacts.ErrJournalCorrupt) {
			return nil, policyErr("journal_corrupt", "%s: %v; the run cannot be resumed safely", p, err)
		}
		return nil, err
	}
	st := &journalState{finished: map[string]bool{}, tornBytes: c.TornBytes}
	if c.TornTail {
		if err := os.Truncate(p, c.ValidSize); err != nil {
			return nil, fmt.Errorf("repair journal: %w", err)
		}
	}
	for _, ev := range c.Events {
		st.lastSeq = ev.Seq
		switch ev.Type {
		case "run.started":
			var d runStarted
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				return nil, policyErr("journal_corrupt", "journal event %d (run.started): %v", ev.Seq, err)
			}
			st.started, st.token, st.messages = true, d.Token, d.Messages
		case "run.resumed":
			st.resumes++
		case "model.response":
			var d loop.ModelResponseEvent
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				return nil, policyErr("journal_corrupt", "journal event %d (model.response): %v", ev.Seq, err)
			}
			msg := loop.Message{Role: loop.RoleAssistant, Content: d.Content}
			if len(d.ToolCalls) > 0 {
				msg.ToolCalls = d.ToolCalls
			}
			st.messages = append(st.messages, msg)
			st.progress.Turns++
			st.progress.Usage = st.progress.Usage.Add(d.Usage)
			st.progress.TurnUsage = append(st.progress.TurnUsage, d.Usage)
		case "tool.started":
			var d loop.ToolStartedEvent
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				return nil, policyErr("journal_corrupt", "journal event %d (tool.started): %v", ev.Seq, err)
			}
			st.toolOrder = append(st.toolOrder, d)
		case "tool.finished":
			var d loop.ToolFinishedEvent
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				return nil, policyErr("journal_corrupt", "journal event %d (tool.finished): %v", ev.Seq, err)
			}
			var out loop.ToolOutput
			if err := artifacts.ReadJSON(filepath.Join(dir, filepath.FromSlash(d.Output)), "harness.tool-output", 1, &out); err != nil {
				return nil, policyErr("tool_output_missing", "journal event %d: tool output %s: %v", ev.Seq, d.Output, err)
			}
			st.finished[d.CallID] = true
			st.messages = append(st.messages, loop.Message{Role: loop.RoleTool, Content: out.Content, ToolCallID: d.CallID})
		}
	}
	return st, nil
}

func (r *runner) resume(ctx context.Context, st *journalState, ro ResumeOptions) (*Result, error) {
	if _, err := r.journal.Append("run.resumed", struct {
		Segment        int          `json:"segment"`
		PreviousStatus string       `json:"previousStatus"`
		TornBytes      int          `json:"tornBytes,omitempty"`
		Limits         LimitsRecord `json:"limits"`
	}{r.segment, r.manifest.Status, st.tornBytes, limitsRecord(Options{MaxTurns: r.limits.MaxTurns, Timeout: r.limits.Timeout, MaxTokens: r.limits.MaxTokens})}); err != nil {
		return nil, err
	}
	if st.tornBytes > 0 {
		r.progress("journal: dropped a torn last line (%d bytes) left by a crash", st.tornBytes)
	}
	r.manifest.Status, r.manifest.Error, r.manifest.FinishedAt = StatusRunning, nil, nil
	outcome, err := r.resumeStages(ctx, st, ro)
	if err != nil {
		return r.finish(outcome, err)
	}
	return r.finish(outcome, outcomeError(outcome))
}

func (r *runner) resumeStages(ctx context.Context, st *journalState, ro ResumeOptions) (*loop.Outcome, error) {
	r.acts = newActivationLog(r.path(fileActivations), r.journal)
	_, regErr := os.Stat(r.path(fileRegistry))
	switch {
	case len(r.res.skillsRoots) == 0:
	case regErr != nil && !st.started:
		// The run stopped before its snapshot was written: take it now.
		if err := r.snapshot(ctx); err != nil {
			return nil, err
		}
	default:
		reg, err := skills.ReadRegistry(r.path(fileRegistry))
		if err != nil {
			return nil, policyErr("registry_unreadable", "run-start registry: %v", err)
		}
		r.registry = reg
		r.scanSkills(reg)
		if !r.opts.NoSkillCatalog {
			r.catalog = skills.BuildCatalog(reg, r.opts.CatalogBudget)
		}
	}
	if r.registry != nil && st.started {
		if err := artifacts.ReadJSON(r.path(fileActivations), "harness.skill-activations", 1, &r.acts.rec); err != nil {
			return nil, policyErr("activations_unreadable", "skill-activations.json: %v", err)
		}
		for _, a := range r.acts.rec.Activations {
			r.acts.active[a.Name] = true
		}
	}
	model, tools, closeAll, err := r.modelAndTools(ctx)
	if err != nil {
		return nil, err
	}
	defer closeAll()
	if err := r.checkDrift(ctx, tools, ro.AllowDrift); err != nil {
		return nil, err
	}
	if !st.started {
		// The run stopped before its conversation was journaled: seed it
		// again from the recorded inputs and the run-start snapshot (the
		// preload still holds each skill to its snapshot digest).
		history, err := r.preload()
		if err != nil {
			return nil, err
		}
		if r.manifest.Identity.Digest == "" {
			if err := r.seal(tools); err != nil {
				return nil, err
			}
		}
		if err := r.started(history); err != nil {
			return nil, err
		}
		st.messages = history
	}
	history, err := r.settleInterrupted(st, tools)
	if err != nil {
		return nil, err
	}
	r.progress("resume %s (segment %d): %d turns so far", r.res.runID, r.segment, st.progress.Turns)
	r.gate = r.newGate(nil)
	for _, m := range history {
		if m.Role == loop.RoleTool || m.Role == loop.RoleUser && strings.Contains(m.Content, "<<<skill-context") {
			r.gate.observe("journal:"+string(m.Role), m.Content)
		}
	}
	if err := r.writePolicySnapshot(r.gate); err != nil {
		return nil, err
	}
	out := loop.Run(ctx, loop.Config{
		Model: model, ModelName: r.opts.Model, Tools: tools, Limits: r.limits,
		Journal: r.journal, ToolOutputDir: r.path(dirToolOutputs), Start: r.start, Gate: r.gate,
	}, history)
	return &out, nil
}

// settleInterrupted decides the fate of tool calls that started but never
// finished. A read runs again (the loop finds it pending). A write or
// side effect is not repeated: the model is told its outcome is unknown,
// and the call is recorded as interrupted.
func (r *runner) settleInterrupted(st *journalState, tools []loop.Tool) ([]loop.Message, error) {
	effects := map[string]loop.Effect{}
	for _, t := range tools {
		effects[t.Spec().Name] = t.Effect()
	}
	history := st.messages
	for _, call := range st.toolOrder {
		// A tool the run no longer offers is treated as a side effect:
		// never repeated.
		// A subagent is not repeated either: delegate_task finds the
		// child's run directory and resumes it from its own journal.
		if st.finished[call.CallID] || effects[call.Tool] == loop.EffectRead || call.Tool == delegateToolName {
			continue
		}
		res := loop.ErrorResult("interrupted", fmt.Sprintf("the run stopped while %s was running; its outcome is unknown and it was not repeated: check its effects before calling it again", call.Tool), nil)
		name := fmt.Sprintf("%s-%s-interrupted.json", fileSafeName(call.CallID), fileSafeName(call.Tool))
		out := loop.ToolOutput{Envelope: artifacts.NewEnvelope("harness.tool-output", 1), Turn: call.Turn, CallID: call.CallID, Tool: call.Tool,
			Arguments: call.Arguments, Status: "interrupted", Content: res.Content}
		if err := os.MkdirAll(r.path(dirToolOutputs), 0o755); err != nil {
			return nil, err
		}
		if err := artifacts.WriteJSON(filepath.Join(r.path(dirToolOutputs), name), out); err != nil {
			return nil, err
		}
		if _, err := r.journal.Append("tool.finished", loop.ToolFinishedEvent{Turn: call.Turn, CallID: call.CallID, Tool: call.Tool,
			Status: "interrupted", Code: "interrupted", Output: dirToolOutputs + "/" + name}); err != nil {
			return nil, err
		}
		st.finished[call.CallID] = true
		history = append(history, loop.Message{Role: loop.RoleTool, Content: res.Content, ToolCallID: call.CallID})
	}
	return history, nil
}

func fileSafeName(s string) string {
	var b strings.Builder
	for _, c := range s {
		if c == '-' || c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			b.WriteRune(c)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// checkDrift compares what the run depends on now with what it recorded:
// identity (harness version, tools, policy) and skills (re-scanned).
// Drift is reported in drift-report.json and a drift.detected event; it
// refuses the resume (exit 5) unless allowDrift. Tools keep checking
// against the run-start snapshot either way.
func (r *runner) checkDrift(ctx context.Context, tools []loop.Tool, allowDrift bool) error {
	rep := &DriftReport{Envelope: artifacts.NewEnvelope("harness.drift-report", 1), Segment: r.segment, CheckedAt: r.now().UTC(),
		Identity: []DriftItem{}, Skills: SkillDrift{Added: []string{}, Removed: []string{}, Changed: []string{}}, Resources: []ResourceDrift{}}
	id := r.manifest.Identity
	sealed := id.Digest != "" // a run that stopped before sealing has no identity to compare
	add := func(field, rec, cur string) {
		if sealed && rec != cur {
			rep.Identity = append(rep.Identity, DriftItem{Field: field, Recorded: rec, Current: cur})
		}
	}
	add("harnessVersion", id.HarnessVersion, r.opts.Version)
	specs := make([]loop.ToolSpec, len(tools))
	effects := make([]loop.Effect, len(tools))
	for i, t := range tools {
		specs[i], effects[i] = t.Spec(), t.Effect()
	}
	if td, err := toolsDigest(specs, effects); err == nil {
		add("toolsDigest", string(id.ToolsDigest), string(td))
	}
	add("policyDigest", string(id.PolicyDigest), string(policyDigest(r.opts)))
	if r.registry != nil {
		// Files whose stat fingerprint is unchanged keep their recorded
		// digests: only what changed is read again.
		now, err := skills.Scan(ctx, skills.ScanOptions{Roots: r.res.skillsRoots, Workspace: r.res.workspace, SandboxWorkspace: SandboxWorkspace, Limits: r.registry.Limits, Previous: r.registry})
		if err != nil {
			rep.Identity = append(rep.Identity, DriftItem{Field: "skillsRoots", Recorded: "scannable", Current: err.Error()})
		} else {
			compareSkills(rep, r.registry, now, r.watched())
			if r.registry.Digest != now.Digest {
				rep.Identity = append(rep.Identity, DriftItem{Field: "registryDigest", Recorded: string(r.registry.Digest), Current: string(now.Digest)})
			}
		}
	}
	rep.Drift, rep.Allowed = rep.any(), allowDrift
	if !rep.Drift {
		return nil
	}
	if err := artifacts.WriteJSON(r.path(fileDrift), rep); err != nil {
		return err
	}
	r.manifest.Artifacts = append(r.manifest.Artifacts, fileDrift)
	if _, err := r.journal.Append("drift.detected", rep); err != nil {
		return err
	}
	if allowDrift {
		r.progress("drift detected and allowed (--allow-drift); tools still check against the run-start snapshot; see %s", r.path(fileDrift))
		return nil
	}
	r.driftRefused = true
	var what []string
	for _, it := range rep.Identity {
		what = append(what, it.Field)
	}
	for _, s := range rep.Skills.Changed {
		what = append(what, "skill "+s)
	}
	return policyErr("drift_detected", "what the run depends on changed since it started (%s); nothing was run. See %s, then resume with --allow-drift to continue anyway", strings.Join(what, ", "), r.path(fileDrift))
}

// watched are the skills whose every file is compared: active skills and
// skills with an allowed script.
func (r *runner) watched() map[string]bool {
	w := map[string]bool{}
	for name := range r.acts.active {
		w[name] = true
	}
	for _, e := range r.opts.AllowSkillScripts {
		if s, _, ok := strings.Cut(e, ":"); ok {
			w[s] = true
		}
	}
	return w
}

func compareSkills(rep *DriftReport, was, now *skills.Registry, watched map[string]bool) {
	eff := func(reg *skills.Registry) map[string]*skills.Skill {
		m := map[string]*skills.Skill{}
		for i := range reg.Skills {
			if reg.Skills[i].ShadowedBy == "" {
				m[reg.Skills[i].Name] = &reg.Skills[i]
			}
		}
		return m
	}
	a, b := eff(was), eff(now)
	for _, name := range was.Available() {
		s2, ok := b[name]
		if !ok {
			rep.Skills.Removed = append(rep.Skills.Removed, name)
			continue
		}
		s1 := a[name]
		if s1.Digest != s2.Digest || s1.TreeDigest != s2.TreeDigest || s1.SkillPath != s2.SkillPath {
			rep.Skills.Changed = append(rep.Skills.Changed, name)
		}
		if !watched[name] {
			continue
		}
		for _, res := range s1.Resources {
			cur, ok := s2.Resource(res.Path)
			switch {
			case !ok:
				rep.Resources = append(rep.Resources, ResourceDrift{Skill: name, Path: res.Path, Change: "removed", Recorded: res.Digest})
			case cur.Digest != res.Digest:
				rep.Resources = append(rep.Resources, ResourceDrift{Skill: name, Path: res.Path, Change: "changed", Recorded: res.Digest, Current: cur.Digest})
			}
		}
		for _, res := range s2.Resources {
			if _, ok := s1.Resource(res.Path); !ok {
				rep.Resources = append(rep.Resources, ResourceDrift{Skill: name, Path: res.Path, Change: "added", Current: res.Digest})
			}
		}
	}
	for _, name := range now.Available() {
		if _, ok := a[name]; !ok {
			rep.Skills.Added = append(rep.Skills.Added, name)
		}
	}
}
