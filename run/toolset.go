package run

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/harness-dev/harness/discovery"
	"github.com/harness-dev/harness/egress"
	"github.com/harness-dev/harness/forge"
	"github.com/harness-dev/harness/gitsource"
	"github.com/harness-dev/harness/grant"
	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/runopts"
	"github.com/harness-dev/harness/scripts"
	"github.com/harness-dev/harness/store"
	"github.com/harness-dev/harness/tools"
	"github.com/harness-dev/harness/workspace"
)

// tools builds the tool set the model is offered: read tools always,
// write and side-effect tools only when the operator allowed them by name.
func (r *runner) tools(ctx context.Context) ([]loop.Tool, func(), error) {
	// Tools never touch the run directories (this run's and every other
	// run's records) or a cassette being recorded.
	// A resumed run directory may have moved since (a CI artifact): its
	// actual parent is protected as well as the recorded one.
	ws, err := workspace.Open(r.res.workspace, workspace.DefaultSandbox, r.res.cwd,
		append([]string{r.manifest.Inputs.ArtifactsDir, filepath.Dir(r.res.runDir), runopts.Abs(r.opts.Record)}, r.opts.Protect...))
	if err != nil {
		return nil, nil, err
	}
	if err := ws.KeepReadOnly(grant.ReadOnlyPaths(r.res.workspace, r.res.allRoots(), runopts.AbsAll(r.opts.ReadOnly), runopts.AbsAll(r.opts.AllowProtectedWrite))...); err != nil {
		ws.Close()
		return nil, nil, err
	}
	git := r.gitScan(ctx)
	if git != nil {
		// Walked when the first write needs it (grant.NewGitScan).
		ws.KeepReadOnlyLater(func() []string {
			return grant.ReadOnlyPaths(r.res.workspace, nil, git.ControlPaths(), runopts.AbsAll(r.opts.AllowProtectedWrite))
		})
	}
	ws.GitAllowed = runopts.AbsAll(r.opts.AllowProtectedWrite)
	r.ws = ws
	toolset := tools.FileTools(ws, slices.Contains(r.opts.AllowTools, "write_file"))
	toolset = append(toolset, tools.SkillTools(&tools.Skills{
		Registry: r.registry, Catalog: r.catalog, Active: r.acts, Token: r.token, RunID: r.res.runID, Now: r.now,
		AllowDrift: r.opts.AllowDrift, Untrusted: r.untrusted, RunDir: r.res.runDir, Redact: r.redact,
		Embed: r.embed, AnyName: r.opts.ReloadCreated, Roots: r.res.allRoots(), Workspace: r.res.workspace, SandboxWorkspace: workspace.DefaultSandbox,
	})...)
	closers := []func(){func() { ws.Close() }}
	if slices.Contains(r.opts.AllowTools, tools.DelegateToolName) && len(r.profiles) > 0 && r.lin.depth < r.lin.maxDepth {
		toolset = append(toolset, &tools.Delegate{Profiles: r.profiles, Runner: &children{parent: r}})
	}
	var backend scripts.Backend
	var probe error
	self, _ := os.Executable()
	helper := scripts.Helper(self)
	if slices.Contains(r.opts.AllowTools, "run_skill_script") || slices.Contains(r.opts.AllowTools, tools.CommandToolName) || runopts.ForgeAllowed(r.opts.AllowTools) {
		want := scripts.Backend(r.opts.Sandbox)
		backend, probe = scripts.Probe(ctx, want, helper)
		r.manifest.Inputs.Sandbox = &record.SandboxRecord{Requested: string(want), Backend: string(backend)}
		if probe != nil {
			r.manifest.Inputs.Sandbox.Error = probe.Error()
		}
	}
	if runopts.ForgeAllowed(r.opts.AllowTools) {
		st, err := store.Open(r.opts.SkillsStore, r.opts.RunKey)
		if err != nil {
			return nil, nil, err
		}
		ap, err := forge.ParseApproval(r.opts.ApproveCreated)
		if err != nil {
			return nil, nil, err
		}
		f, err := forge.New(forge.Config{Store: st, Root: r.opts.ForgeRoot, RunDir: r.res.runDir, Redact: r.redact, Approve: ap, Workspace: ws,
			Sandbox:  forge.Sandbox{Backend: backend, Probe: probe, Helper: helper, MemoryLimit: r.opts.ScriptMemoryLimit, RunID: r.res.runID},
			Registry: r.registry, Now: r.now, LearnedFrom: r.opts.LearnedFrom,
			MinPassRate: r.opts.ForgeMinPassRate, EvalDraft: r.draftEvaluator(),
			OnStored: func(c record.SkillCreated) error {
				if _, err := r.journal.Append(record.EventSkillCreated, c); err != nil {
					return err
				}
				if r.opts.ReloadCreated && c.Outcome == record.ForgePromoted {
					return r.reloadCreated(ctx, c)
				}
				return nil
			}})
		if err != nil {
			return nil, nil, err
		}
		toolset = append(toolset, tools.ForgeTools(f, r.res.runID, r.opts.AllowTools)...)
	}
	if runopts.DiscoveryAllowed(r.opts.AllowTools) {
		d, err := r.discovery(ctx)
		if err != nil {
			return nil, nil, err
		}
		toolset = append(toolset, tools.DiscoveryTools(d, r.opts.AllowTools)...)
	}
	stager := tools.NewStager()
	closers = append(closers, stager.Close)
	allowed, err := egress.ParseRules(r.opts.AllowNetwork)
	if err != nil {
		return nil, nil, err
	}
	network := &tools.Network{Allowed: allowed, RunDir: r.res.runDir, Redact: r.redact}
	closers = append(closers, network.Close)
	if slices.Contains(r.opts.AllowTools, tools.CommandToolName) {
		patterns, _ := runopts.CommandPatterns(r.opts.AllowCommands) // checked with the options
		toolset = append(toolset, tools.NewCommandTool(tools.Commands{Workspace: ws, Patterns: patterns, Backend: backend, Probe: probe, Helper: helper,
			RunID: r.res.runID, Now: r.now, RunDir: r.res.runDir, Redact: r.redact, MemoryLimit: r.opts.ScriptMemoryLimit, Cache: r.opts.CommandCache,
			Grant: r.opts.CommandGrantFrontmatter(), PassEnv: r.opts.PassEnv, Lookup: os.LookupEnv, Network: network, Git: git}))
	}
	// A child inherits its parent's --confirm-tool and may be given
	// fewer servers: the names were checked where the operator gave them.
	if r.resumed == nil && r.lin.depth == 0 && slices.ContainsFunc(r.opts.ConfirmTools, func(p string) bool { return strings.Contains(p, tools.MCPSeparator) }) {
		op, err := r.opts.MCPServers()
		if err != nil {
			return nil, nil, err
		}
		if err := tools.CheckMCPConfirmed(r.opts.ConfirmTools, op, r.registry, stager); err != nil {
			return nil, nil, err
		}
	}
	if r.opts.MCPWanted() {
		if backend == "" && probe == nil {
			backend, probe = scripts.Probe(ctx, scripts.Backend(r.opts.Sandbox), helper)
		}
		op, err := r.opts.MCPServers()
		if err != nil {
			return nil, nil, err
		}
		if op == nil && r.opts.MCPConfig != "" {
			return nil, nil, fmt.Errorf("internal: --mcp-config %s was never read", r.opts.MCPConfig)
		}
		effects, err := tools.ParseToolEffects(r.opts.MCPToolEffects)
		if err != nil {
			return nil, nil, err
		}
		if r.resumed == nil {
			if err := tools.CheckMCPAllowed(r.opts.AllowTools, op, r.registry, stager); err != nil {
				return nil, nil, err
			}
		}
		r.mcp = tools.NewMCPHub(tools.MCP{
			Git:      git,
			Registry: r.registry, Active: r.acts, Workspace: ws, Stager: stager, Backend: backend, Probe: probe, Helper: helper,
			MemoryLimit: r.opts.ScriptMemoryLimit, Operator: op, PassEnv: r.opts.PassEnv, Allowed: r.opts.AllowTools, Effects: effects,
			RunID: r.res.runID, Now: r.now, RunDir: r.res.runDir, Redact: r.redact, Journal: r.journal,
			Progress: r.progress, Network: network,
		})
		closers = append(closers, r.mcp.Close)
	}
	if slices.Contains(r.opts.AllowTools, "run_skill_script") {
		st := tools.NewScriptTool(tools.Scripts{
			Stager:   stager,
			Registry: r.registry, Active: r.acts, Workspace: ws, Allowed: r.opts.AllowSkillScripts,
			Backend: backend, Probe: probe, Helper: helper, RunID: r.res.runID, Now: r.now, RunDir: r.res.runDir,
			MemoryLimit: r.opts.ScriptMemoryLimit, WasmMemoryLimit: r.opts.WasmMemoryLimit, Redact: r.redact, Network: network,
			PassEnv: r.opts.PassEnv, Lookup: os.LookupEnv, Git: git,
		})
		toolset = append(toolset, st)
		closers = append(closers, st.Close)
	}
	return toolset, func() {
		for _, c := range slices.Backward(closers) {
			c()
		}
	}, nil
}

// discovery is what discover_skills and install_skill work with: the
// configured indexes, and installs through the run's store into the forge
// root, journaled as the run's own creations (so resume does not count
// them as drift) and, with --reload-created, loadable in the run.
func (r *runner) discovery(ctx context.Context) (*tools.Discovery, error) {
	sources, err := runopts.SkillSources(r.opts.SkillSources)
	if err != nil {
		return nil, err
	}
	d := &tools.Discovery{Registry: r.registry, Sources: sources, Fetcher: &discovery.Fetcher{CacheDir: r.opts.IndexCache}, Live: r.opts.ReloadCreated,
		Discovered: func(rec record.SkillsDiscovered) error {
			_, err := r.journal.Append(record.EventSkillsDiscovered, rec)
			return err
		}}
	if !slices.Contains(r.opts.AllowTools, tools.InstallSkillName) {
		return d, nil
	}
	ap, err := store.ParseApproval("--approve-installed", r.opts.ApproveInstalled)
	if err != nil {
		return nil, err
	}
	d.Install = func(ctx context.Context, callID string, entry discovery.Entry, from string) (record.SkillCreated, error) {
		src, err := gitsource.Parse(entry.Source)
		if err != nil {
			return record.SkillCreated{}, fmt.Errorf("index %s gives %s as the source of %s: %v", from, entry.Source, entry.Name, err)
		}
		if src.Ref == "" {
			src.Ref = entry.Ref
		}
		st, err := store.Open(r.opts.SkillsStore, r.opts.RunKey)
		if err != nil {
			return record.SkillCreated{}, err
		}
		added, err := store.Add(ctx, store.AddOptions{Source: src, Root: r.opts.ForgeRoot, Skills: []string{entry.Name}, Version: entry.Digest, TrustedSources: r.opts.TrustedSources,
			Approve: ap, Store: st, Now: r.now, Command: "install_skill in run " + r.res.runID})
		if err != nil {
			return record.SkillCreated{}, err
		}
		if len(added.Skills) != 1 || added.Skills[0].Installed == nil {
			return record.SkillCreated{}, fmt.Errorf("%s from %s: nothing was installed", entry.Name, from)
		}
		in := added.Skills[0].Installed
		c := record.SkillCreated{Skill: in.Name, Version: in.Version, Root: r.opts.ForgeRoot, Outcome: record.ForgePromoted, CallID: callID, From: from, Source: src.String()}
		if in.Pending {
			c.Outcome = record.ForgePending
		}
		if _, err := r.journal.Append(record.EventSkillCreated, c); err != nil {
			return c, err
		}
		if r.opts.ReloadCreated && c.Outcome == record.ForgePromoted {
			return c, r.reloadCreated(ctx, c)
		}
		return c, nil
	}
	return d, nil
}

// draftEvaluator is how the forge runs a draft's evals: the caller's
// hook, on this run's model, endpoint, key and sandbox (nil without a
// hook: such a draft then waits for a person).
func (r *runner) draftEvaluator() forge.EvalDraft {
	hook := r.opts.EvalDraft
	if hook == nil {
		return nil
	}
	return func(ctx context.Context, skillDir, evalDir, label string) (*record.EvalResult, error) {
		return hook(ctx, runopts.DraftEval{SkillDir: skillDir, Dir: evalDir, MinPassRate: *r.opts.ForgeMinPassRate,
			Model: r.opts.Model, BaseURL: r.opts.BaseURL, WireAPI: r.opts.WireAPI, APIKey: r.opts.APIKey, Sandbox: r.opts.Sandbox,
			Record: r.opts.Record, Replay: r.opts.Replay, Cassette: label, RunKey: r.opts.RunKey})
	}
}
