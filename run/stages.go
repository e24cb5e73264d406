package run

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/harness-dev/harness/cfc"
	"github.com/harness-dev/harness/forge"
	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/runresult"
	"github.com/harness-dev/harness/skills"
	"github.com/harness-dev/harness/tools"
	"github.com/harness-dev/harness/workspace"
)

// execute walks the stages and records how the run ended, whatever
// happened.
func (r *runner) execute(ctx context.Context) (*Result, error) {
	out, err := r.stages(ctx)
	if err == nil {
		err = runresult.ErrorOf(out)
	}
	if err == nil && out != nil && out.Reason == loop.ReasonAwaitingApproval {
		err = &outcome.Error{Code: "awaiting_approval", Msg: runresult.AwaitingMessage(r.res.runDir, r.pendingApprovals), Exit: outcome.ExitApproval}
	}
	return r.finish(out, err)
}

// stages is the one sequence a run and a resume both walk. Each stage
// either does its work (a new run, or a resumed run that stopped before
// that work was recorded) or takes over what the stopped run recorded and
// checks it.
func (r *runner) stages(ctx context.Context) (*loop.Outcome, error) {
	if len(r.opts.OutputSchema) > 0 {
		s, err := loop.NewSchemaCheck(r.opts.OutputSchema)
		if err != nil {
			return nil, outcome.Usage("output_schema_invalid", "output schema: %v", err)
		}
		r.schema = s
	}
	if err := r.registryStage(ctx); err != nil {
		return nil, err
	}
	if r.lin.afterSnapshot != nil {
		r.lin.afterSnapshot()
	}
	history, err := r.activationStage()
	if err != nil {
		return nil, err
	}
	model, toolset, closeAll, err := r.modelAndTools(ctx)
	if err != nil {
		return nil, err
	}
	defer closeAll()
	if err := r.identityStage(ctx, toolset); err != nil {
		return nil, err
	}
	if history, err = r.conversationStage(history, toolset); err != nil {
		return nil, err
	}
	r.gate = r.newGate(history)
	r.approvals = r.newApprovals()
	if r.resumed != nil && r.decisions.Any() {
		if err := r.approvalRun().Decide(r.decisions); err != nil {
			// A call whose skill or arguments changed since it was
			// requested leaves the run resumable, as drift does.
			if e := (*outcome.Error)(nil); errors.As(err, &e) && e.Code == "approval_drift" {
				r.driftRefused = true
			}
			return nil, err
		}
	}
	if err := r.writePolicySnapshot(); err != nil {
		return nil, err
	}
	if r.resumed != nil {
		r.progress("resume %s (segment %d): %d turns so far", r.res.runID, r.segment, r.start.Turns)
	} else {
		r.progress("run %s: model %s, %d tools, %d skills preloaded", r.res.runID, r.opts.Model, len(toolset), len(r.acts.List()))
	}
	cfg := loop.Config{
		Model:            model,
		ModelName:        r.opts.Model,
		WireAPI:          r.opts.Wire(),
		Params:           r.opts.Params(),
		Tools:            toolset,
		Limits:           r.limits,
		Journal:          r.journal,
		ToolOutputDir:    r.path(record.DirToolOutputs),
		Start:            r.start,
		Gate:             r.gate,
		Approver:         r.approvals,
		Redact:           r.redact,
		AllowEmptyAnswer: r.opts.AllowEmptyAnswer,
		AnswerRetries:    r.opts.SchemaRetries,
	}
	if r.mcp != nil {
		cfg.MoreTools = r.mcp.Tools
	}
	if r.schema != nil {
		cfg.Answer = r.schema
	}
	r.loopStarted = true
	out := loop.Run(ctx, cfg, history)
	if r.mcp != nil {
		// Before the run's outcome is written: a skill's server can
		// write from a thread of its own after its last call.
		if err := r.mcp.Stop(); err != nil {
			return &out, err
		}
	}
	if out.Reason == loop.ReasonAwaitingApproval {
		pending, err := r.approvalRun().Request(out.Pending, r.childWaiting, out.Turns)
		r.pendingApprovals = append(r.pendingApprovals, pending...)
		if err != nil {
			return &out, err
		}
	}
	return &out, nil
}

// started reports whether the stopped run journaled its conversation.
func (r *runner) started() bool { return r.resumed != nil && r.resumed.Started }

// registryStage takes the skill snapshot (skill-registry.json), or takes
// over the one the stopped run recorded. Either way the content scan marks
// what enforce-strict will not activate.
func (r *runner) registryStage(ctx context.Context) error {
	if len(r.res.allRoots()) == 0 {
		return nil
	}
	// A resumed run takes the snapshot its journal recorded; one that
	// stopped before taking it takes it now (any file left there is
	// unrecorded, and overwritten).
	if r.resumed != nil && (r.resumed.Snapshot != nil || r.resumed.Started) {
		reg, err := r.resumed.Registry(r.res.runDir)
		if err != nil {
			return err
		}
		r.registry = reg
		r.contentScan(reg)
		if !r.opts.NoSkillCatalog {
			r.catalog = skills.BuildCatalog(reg, r.opts.CatalogBudget)
		}
		// After the catalog: the catalog (and so the tools) stays what
		// the run started with; the deltas only make the skills loadable.
		for _, d := range r.resumed.Deltas {
			r.applyDelta(d.Skill)
		}
		return nil
	}
	scan := skills.ScanOptions{
		Roots:            r.res.allRoots(),
		Workspace:        r.res.workspace,
		SandboxWorkspace: workspace.DefaultSandbox,
		Now:              r.now,
		Previous:         r.opts.Previous,
	}
	scan.Cache = r.snapshotCache(scan)
	reg, err := skills.Scan(ctx, scan)
	if err != nil {
		return &outcome.Error{Code: "registry_scan_failed", Msg: fmt.Sprintf("scan skills: %v", err), Exit: outcome.ExitUsage, Err: err}
	}
	r.registry = reg
	if !r.opts.NoSkillCatalog {
		r.catalog = skills.BuildCatalog(reg, r.opts.CatalogBudget)
		reg.Diagnostics = append(reg.Diagnostics, r.catalog.Diagnostics()...)
	}
	r.contentScan(reg)
	fileDigest, err := r.redact.WriteJSONDigest(r.path(record.FileRegistry), reg)
	if err != nil {
		return err
	}
	r.manifest.Artifacts = append(r.manifest.Artifacts, record.FileRegistry)
	if _, err := r.journal.Append(record.EventRegistrySnapshotted, record.RegistrySnapshotted{Digest: reg.Digest, FileDigest: fileDigest, Skills: len(reg.Skills), Diagnostics: len(reg.Diagnostics)}); err != nil {
		return err
	}
	for _, st := range r.catalog.Steps {
		if _, err := r.journal.Append(record.EventCatalogTruncated, st); err != nil {
			return err
		}
	}
	for _, f := range r.findings {
		if _, err := r.journal.Append(record.EventContentFlagged, f); err != nil {
			return err
		}
	}
	return nil
}

// activationStage preloads the --skill skills and seeds the conversation,
// or takes over the activations and conversation of the stopped run.
func (r *runner) activationStage() ([]loop.Message, error) {
	if r.started() {
		if r.registry != nil {
			rec, err := r.resumed.Activations(r.res.runDir)
			if err != nil {
				return nil, err
			}
			r.acts.Restore(rec)
		}
		return r.resumed.Messages, nil
	}
	return r.preload()
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
	if len(missing) > 0 && r.lin.depth > 0 {
		// A profile's skills are a wish list: what the registry lacks is
		// skipped and said, not fatal.
		for _, name := range missing {
			r.event(record.EventSkillSkipped, record.SkillSkipped{Name: name, Reason: "not in the registry"})
			r.progress("profile skill %s not found; skipped", name)
		}
		missing = nil
	}
	for _, name := range missing {
		if code, msg := r.registry.WhyMissing(name); code != "skill_not_found" {
			return nil, outcome.Usage(code, "%s", msg)
		}
	}
	if len(missing) > 0 {
		avail := r.registry.Available()
		list := "none"
		if len(avail) > 0 {
			list = strings.Join(avail, ", ")
		}
		return nil, outcome.Usage("skill_not_found", "skill not found: %s; available skills: %s", strings.Join(missing, ", "), list)
	}
	chosen = withParts(r.registry, chosen)
	contents := make([][]byte, len(chosen))
	texts := []string{r.opts.Prompt}
	for i, s := range chosen {
		b, err := skills.ReadSkillFile(s)
		if err != nil {
			var ref *skills.Refusal
			if errors.As(err, &ref) {
				return nil, outcome.Policy(ref.Code, "preload %s: %s", s.Name, ref.Msg)
			}
			return nil, outcome.Policy("skill_unreadable", "preload %s: %v", s.Name, err)
		}
		if !s.IsEligible() && !r.opts.SkipEligibility {
			return nil, outcome.Usage("skill_ineligible", "skill %s cannot run on this machine: %s; fix: %s (or pass --skip-eligibility)", s.Name, skills.DescribeMissing(s.Missing), skills.DescribeHints(s.InstallHints))
		}
		if rules, bad := r.untrusted(s.Name); bad {
			return nil, outcome.Policy("skill_untrusted", "preload %s: critical content findings (%s) and --cfc-mode enforce-strict: review the skill, then pass --trust-skill %s to vouch for it", s.Name, strings.Join(rules, ", "), s.Name)
		}
		contents[i] = b
		texts = append(texts, string(b))
	}
	history := []loop.Message{{Role: loop.RoleSystem, Content: systemPrompt}}
	for _, a := range r.res.attachments {
		texts = append(texts, a.Content)
	}
	if r.registry != nil {
		r.token = tools.BoundaryToken(string(r.registry.Digest)+"\x00"+r.opts.Prompt, texts)
	} else if len(r.res.attachments) > 0 {
		r.token = tools.BoundaryToken(r.opts.Prompt, texts)
	}
	source := r.lin.activationSource
	if source == "" {
		source = record.SourceCLIPreload
	}
	for i, s := range chosen {
		history = append(history, loop.Message{Role: loop.RoleUser, Content: tools.SkillContextBlock(r.token, s, contents[i], "preloaded by the operator for this run")})
		if err := r.acts.Add(record.Activation{
			Name:          s.Name,
			Source:        source,
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
		// Add wrote the file with every preload; without one it is
		// written here, empty.
		if len(chosen) == 0 {
			if err := r.acts.Write(); err != nil {
				return nil, err
			}
		}
		r.manifest.Artifacts = append(r.manifest.Artifacts, record.FileActivations)
	}
	for _, a := range r.res.attachments {
		history = append(history, loop.Message{Role: loop.RoleUser, Content: attachmentBlock(r.token, a)})
	}
	history = append(history, loop.Message{Role: loop.RoleUser, Content: taskMessage(r.opts.Prompt, r.res.cwd)})
	return history, nil
}

// untrusted reports whether enforce-strict forbids activating a skill
// with a critical content finding the operator did not vouch for.
func (r *runner) untrusted(name string) ([]string, bool) {
	if r.opts.CFCMode != string(cfc.ModeEnforceStrict) || slices.Contains(r.opts.TrustSkills, name) {
		return nil, false
	}
	rules := r.critical[name]
	return rules, len(rules) > 0
}

// modelAndTools builds the model, then the tools (delegate_task hands the
// model to subagents), and one function that releases both.
func (r *runner) modelAndTools(ctx context.Context) (loop.Model, []loop.Tool, func(), error) {
	model, closeModel, err := r.model()
	if err != nil {
		return nil, nil, nil, err
	}
	r.shared = model
	r.embed = r.embedder(model)
	toolset, closeTools, err := r.tools(ctx)
	if err != nil {
		closeModel()
		return nil, nil, nil, err
	}
	return model, toolset, func() { closeTools(); closeModel() }, nil
}

// identityStage seals the run identity and records the tool manifest, or,
// for a resumed run that was sealed, checks that nothing it depends on
// drifted since.
func (r *runner) identityStage(ctx context.Context, toolset []loop.Tool) error {
	names := make([]string, len(toolset))
	for i, t := range toolset {
		names[i] = t.Spec().Name
	}
	if r.resumed != nil && r.manifest.Identity.Digest != "" {
		return r.checkDrift(ctx, toolset)
	}
	id, err := r.identityOf(toolset)
	if err != nil {
		return err
	}
	r.manifest.Identity = id
	r.manifest.Inputs.Tools = names
	if r.resumed != nil {
		// Stopped before it was sealed: nothing recorded to compare, but
		// the skills may have moved since the snapshot.
		if err := r.checkDrift(ctx, toolset); err != nil {
			return err
		}
	}
	return r.writeManifest()
}

// conversationStage journals the seeded conversation (run.started), from
// which the journal alone can rebuild the run; a resumed run instead
// settles the tool calls that were running when it stopped.
func (r *runner) conversationStage(history []loop.Message, toolset []loop.Tool) ([]loop.Message, error) {
	if r.started() {
		return r.settleInterrupted(history, toolset)
	}
	_, err := r.journal.Append(record.EventRunStarted, record.RunStarted{
		RunID:    r.res.runID,
		Identity: r.manifest.Identity.Digest,
		Sealed:   r.manifest.Identity,
		Model:    r.opts.Model,
		Tools:    r.manifest.Inputs.Tools,
		Messages: history,
		Token:    r.token,
	})
	return history, err
}

// withParts puts after each composed skill the skills it orders (depth
// first, each once), so that preloading a composition preloads its parts
// through the same checks. A part missing from the registry is left out
// here; the composed skill's text still names it.
func withParts(reg *skills.Registry, chosen []*skills.Skill) []*skills.Skill {
	seen := map[string]bool{}
	for _, s := range chosen {
		seen[s.Name] = true
	}
	var out []*skills.Skill
	var add func(s *skills.Skill)
	add = func(s *skills.Skill) {
		out = append(out, s)
		for _, name := range forge.Composes(s) {
			if p, ok := reg.Lookup(name); ok && !seen[name] {
				seen[name] = true
				add(p)
			}
		}
	}
	for _, s := range chosen {
		add(s)
	}
	return out
}
