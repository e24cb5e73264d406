package run

import (
	"context"
	"errors"
	"path"
	"path/filepath"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/skills"
	"github.com/harness-dev/harness/tools"
)

// maxSummaryChars bounds what a parent reads of a child's answer.
const maxSummaryChars = 4000

// children runs delegate_task's child runs under children/<id>/ of the
// parent's run directory: a full run with the profile's skills, tools and
// limits, the parent's policy, and the parent's model (so one cassette
// serves both).
type children struct{ parent *runner }

func (c *children) RunChild(ctx context.Context, p tools.Profile, task, id string) (record.ChildResult, error) {
	r := c.parent
	childDir := filepath.Join(r.path(record.DirChildren), id)
	var res *Result
	var err error
	var m record.Manifest
	// The child's directory is read from inside the parent's: a link
	// planted at children/<id> leads nowhere.
	data, rerr := artifacts.ReadBeneath(r.res.runDir, filepath.Join(record.DirChildren, id, record.FileManifest))
	if rerr == nil {
		rerr = artifacts.DecodeArtifact(data, record.TypeManifest, record.Version, &m)
	}
	switch {
	case rerr == nil && m.Status == outcome.StatusSucceeded:
		// The child finished before the parent stopped: use its answer.
		res = resultOf(m, childDir)
	case rerr == nil:
		// The parent stopped while the child ran: continue the child
		// from its own journal.
		// Decisions a person made in this run about the child's waiting
		// calls go down to it; its own resume checks them against its
		// journal.
		res, err = Resume(ctx, ResumeOptions{RunDir: childDir, OnEvent: r.opts.OnEvent, Stderr: r.stderr, Now: r.opts.Now, Version: r.opts.Version,
			APIKey: r.opts.APIKey, RunKey: r.opts.RunKey, model: r.shared, byParent: true, Replay: r.opts.Replay, AllowDrift: r.acceptDrift,
			decided: r.approvals.DecidedUnder(id + "/")})
		var e *outcome.Error
		if errors.As(err, &e) && e.Code == "run_succeeded" {
			res, err = resultOf(m, childDir), nil
		}
	default:
		// A child spends from what is left of the parent's budget, not from
		// a budget of its own the size of the parent's.
		budget := r.opts.MaxTokens
		if budget > 0 {
			budget -= loop.UsageSoFar(ctx).TotalTokens
			if budget <= 0 {
				return record.ChildResult{Type: record.TypeSubagentResult, ChildRunID: id, Profile: p.Name, Status: "limit", ExitCode: outcome.ExitLimit,
					Summary: "not started: the run's token budget (--max-tokens) is spent", Usage: loop.Usage{}}, nil
			}
		}
		o, lin, oerr := c.options(p, task, id, budget)
		if err = oerr; err == nil {
			res, err = start(ctx, o, lin)
		}
	}
	if res != nil {
		r.childEnded(id)
	}
	if res != nil && res.Status == outcome.StatusApproval && res.Record != nil && len(res.Record.PendingApprovals) > 0 {
		// The child stopped at a call a person must decide: so does this
		// run, listing it as its own (CHILD_ID/CALL_ID); delegate_task
		// stays unfinished, and resuming this run resumes the child.
		for _, w := range res.Record.PendingApprovals {
			child := path.Join(record.DirChildren, id)
			if w.Child != "" {
				child = path.Join(child, w.Child)
			}
			r.childWaiting = append(r.childWaiting, record.ApprovalRequested{CallID: id + "/" + w.CallID, Tool: w.Tool, Arguments: w.Arguments,
				Skill: w.Skill, Why: w.Why, Child: child})
		}
		return record.ChildResult{}, &loop.AwaitingError{What: "a call in child run " + id}
	}
	out := record.ChildResult{Type: record.TypeSubagentResult, ChildRunID: id, Profile: p.Name, Status: "failed", ExitCode: outcome.ExitFailed, Usage: loop.Usage{}}
	if res != nil {
		out.ExitCode = res.ExitCode
		out.Status = map[string]string{outcome.StatusSucceeded: "ok", outcome.StatusLimit: "limit", outcome.StatusFailed: "failed", outcome.StatusRefused: "refused",
			outcome.StatusInterrupted: "interrupted", outcome.StatusProvider: "provider-error"}[res.Status]
		out.Summary, out.Truncated = bounded(res.Final, maxSummaryChars)
		var cm record.Manifest
		if artifacts.ReadJSON(filepath.Join(res.RunDir, record.FileManifest), record.TypeManifest, record.Version, &cm) == nil {
			// Counted under the model the child ran on.
			out.Usage = cm.Usage.Total
			out.Usage.Model = cm.Inputs.Model
		}
	}
	if err != nil && res == nil {
		e := outcome.As(err)
		out.Summary, out.ExitCode = e.Msg, e.Exit
	}
	return out, nil
}

// childEnded records in the parent's journal which run children/<id>
// holds, as its run.json says now that a segment of it ended: its id and
// journal head. The verifier holds the directory to it, so a child
// swapped for another run's directory (which verifies on its own) or
// removed is found, and resume never starts a new child under an id the
// journal already knows.
func (r *runner) childEnded(id string) {
	rel := path.Join(record.DirChildren, id)
	var m record.Manifest
	data, err := artifacts.ReadBeneath(r.res.runDir, filepath.Join(filepath.FromSlash(rel), record.FileManifest))
	if err == nil {
		err = artifacts.DecodeArtifact(data, record.TypeManifest, record.Version, &m)
	}
	if err != nil || m.JournalHead == "" {
		return // never started: there is no run to name
	}
	r.event(record.EventChildEnded, record.ChildEnded{ID: m.RunID, Dir: rel, Status: m.Status, JournalHead: m.JournalHead})
}

func resultOf(m record.Manifest, dir string) *Result {
	res := &Result{RunID: m.RunID, RunDir: dir, Status: m.Status, ExitCode: m.ExitCode}
	if m.Final != nil {
		res.Final = m.Final.Content
	}
	return res
}

func bounded(s string, n int) (string, bool) {
	if utf8.RuneCountInString(s) <= n {
		return s, false
	}
	return string([]rune(s)[:n]), true
}

// options builds a child run: the parent's workspace and roots, the
// profile's skills, tools, scripts and limits, the parent's policy.
func (c *children) options(p tools.Profile, task, id string, maxTokens int64) (Options, lineage, error) {
	r := c.parent
	po := r.opts
	o := Options{
		Workspace: r.res.workspace, Cwd: r.res.cwd, SkillsRoots: r.res.skillsRoots, ExternalSkillsRoots: r.res.externalRoots, Protect: po.Protect,
		Skills: p.Skills, Prompt: task, PromptSource: "subagent:" + p.Name,
		Model: po.Model, WireAPI: po.WireAPI, BaseURL: po.BaseURL, APIKey: po.APIKey,
		AllowTools: p.AllowedTools, AllowSkillScripts: p.AllowSkillScripts, Sandbox: po.Sandbox,
		MaxTurns: p.MaxTurns, MaxTokens: maxTokens,
		ArtifactsDir: r.path(record.DirChildren), RunID: id,
		// A tool the operator wants a person to confirm is confirmed in
		// a child too.
		ConfirmTools: po.ConfirmTools,
		CFCMode:      po.CFCMode, PromptRole: po.PromptRole, FailOnDenial: po.FailOnDenial, AllowUnmediated: po.AllowUnmediated,
		HonorAllowedTools: po.HonorAllowedTools, TrustSkills: po.TrustSkills, AllowDrift: po.AllowDrift,
		NoSkillCatalog: true, CatalogBudget: po.CatalogBudget, Tiers: po.Tiers, Prices: po.Prices,
		OnEvent: po.OnEvent, Stderr: r.stderr, Now: po.Now, Version: po.Version, RunKey: po.RunKey,
	}
	if tier := c.tierOf(p); p.Model != "" {
		o.Model = p.Model
	} else if tier != "" {
		model, mapped := po.TierModel(tier)
		if !mapped && tier == "vision" {
			return o, lineage{}, outcome.Usage("tier_unmapped", "profile %s needs tier vision, and no model is marked as able to see images: map one with --tier vision=MODEL", p.Name)
		}
		if !mapped {
			r.unmappedTier(tier, model)
		}
		o.Model = model
	}
	if p.Sandbox != "" {
		o.Sandbox = p.Sandbox
	}
	if p.Timeout != "" {
		o.Timeout, _ = time.ParseDuration(p.Timeout)
	}
	if o.MaxTurns == 0 {
		o.MaxTurns = 50
	}
	// A skill the child runs with may narrow its turns and tokens, never
	// widen them.
	for _, name := range p.Skills {
		if r.registry == nil {
			break
		}
		if s, ok := r.registry.Lookup(name); ok {
			if l, _ := skills.LimitsOf(s.Frontmatter); l != nil {
				o.MaxTurns, o.MaxTokens = skills.Narrower(o.MaxTurns, l.MaxTurns), skills.Narrower(o.MaxTokens, l.MaxTokens)
			}
		}
	}
	lin := lineage{model: r.shared, depth: r.lin.depth + 1, activationSource: record.SourceSubagent}
	if p.MaxDepth > 0 {
		o.Profiles, lin.profiles, lin.maxDepth = po.Profiles, r.lin.profiles, r.lin.depth+1+p.MaxDepth
	}
	return o, lin, nil
}

// tierOf is the tier a child runs at: its profile's, else the first its
// skills ask for.
func (c *children) tierOf(p tools.Profile) string {
	if p.Tier != "" || c.parent.registry == nil {
		return p.Tier
	}
	for _, name := range p.Skills {
		if s, ok := c.parent.registry.Lookup(name); ok {
			if t, _ := skills.TierOf(s.Frontmatter); t != "" {
				return t
			}
		}
	}
	return ""
}

// unmappedTier says, once per tier, on stderr, in the journal and in
// run.json, that a tier the operator mapped to no model runs on the run's
// own.
func (r *runner) unmappedTier(tier, model string) {
	if slices.Contains(r.manifest.UnmappedTiers, tier) {
		return
	}
	r.manifest.UnmappedTiers = append(r.manifest.UnmappedTiers, tier)
	r.event(record.EventTierUnmapped, map[string]string{"tier": tier, "model": model})
	r.progress("tier %s is mapped to no model (--tier %s=MODEL): its child runs on %s", tier, tier, model)
}
