package run

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/audit"
	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/skills"
	"github.com/harness-dev/harness/store"
	"github.com/harness-dev/harness/workspace"
)

// checkDrift compares what the run depends on now with what it recorded:
// identity (harness version, tools, policy) and skills (re-scanned).
// Drift is reported in drift-report.json and a drift.detected event; it
// refuses the resume (exit 5) unless the resume accepts drift. Tools keep
// checking against the run-start snapshot either way.
func (r *runner) checkDrift(ctx context.Context, toolset []loop.Tool) error {
	rep := &record.DriftReport{Envelope: artifacts.NewEnvelope(record.TypeDrift, record.Version), Segment: r.segment, CheckedAt: r.now().UTC(),
		Identity: []record.DriftItem{}, Skills: skills.Changes{Added: []string{}, Removed: []string{}, Changed: []string{}}, Resources: []skills.ResourceDrift{}}
	id := r.manifest.Identity
	add := func(field, rec, cur string) {
		if rec != cur {
			rep.Identity = append(rep.Identity, record.DriftItem{Field: field, Recorded: rec, Current: cur})
		}
	}
	add("harnessVersion", id.HarnessVersion, r.opts.Version)
	if td, err := toolsDigest(toolset); err == nil {
		add("toolsDigest", string(id.ToolsDigest), string(td))
	}
	add("policyDigest", string(id.PolicyDigest), string(r.opts.PolicyDigest(r.lin.profiles)))
	rep.Identity = append(rep.Identity, r.mcpDrift(ctx)...)
	add("promptRole", id.PromptRole, r.opts.PromptRole)
	add("model", id.Model, r.opts.Model)
	// A run recorded before the choice existed went over Chat Completions.
	add("wireApi", cmp.Or(id.WireAPI, loop.WireChat), r.opts.Wire())
	if r.registry != nil {
		// Every file is read again unless the snapshot cache vouches for
		// it: the recorded registry cannot (see skills.ScanOptions.Previous).
		scan := skills.ScanOptions{Roots: r.res.allRoots(), Workspace: r.res.workspace, SandboxWorkspace: workspace.DefaultSandbox, Limits: r.registry.Limits}
		scan.Cache = r.snapshotCache(scan)
		now, err := skills.Scan(ctx, scan)
		if err != nil {
			rep.Identity = append(rep.Identity, record.DriftItem{Field: "skillsRoots", Recorded: "scannable", Current: err.Error()})
		} else {
			r.onDisk = now
			rep.Skills, rep.Resources = skills.Compare(r.registry, now, r.watched())
			if own := r.ownCreations(now, &rep.Skills); !own || len(rep.Skills.Added)+len(rep.Skills.Changed)+len(rep.Skills.Removed) > 0 {
				add("registryDigest", string(r.registry.Digest), string(now.Digest))
			}
		}
	}
	rep.Drift, rep.Allowed = rep.Any(), r.acceptDrift || r.acceptModelChange && onlyModel(rep)
	if !rep.Drift {
		return nil
	}
	if err := r.redact.WriteJSON(r.path(record.FileDrift), rep); err != nil {
		return err
	}
	r.manifest.Artifacts = append(r.manifest.Artifacts, record.FileDrift)
	if _, err := r.journal.Append(record.EventDriftDetected, rep); err != nil {
		return err
	}
	if r.acceptModelChange {
		change := map[string]string{"from": id.Model, "to": r.opts.Model}
		if w := cmp.Or(id.WireAPI, loop.WireChat); w != r.opts.Wire() {
			change["wireApiFrom"], change["wireApiTo"] = w, r.opts.Wire()
		}
		if _, err := r.journal.Append(record.EventModelChanged, change); err != nil {
			return err
		}
	}
	if rep.Allowed {
		r.progress("drift detected and allowed (--allow-drift); tools still check against the run-start snapshot; see %s", r.path(record.FileDrift))
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
	for _, d := range rep.Resources {
		what = append(what, d.Skill+"/"+d.Path+" "+d.Change)
	}
	return outcome.Policy("drift_detected", "what the run depends on changed since it started (%s); nothing was run. See %s, then resume with --allow-drift to continue anyway", strings.Join(what, ", "), r.path(record.FileDrift))
}

// onlyModel reports whether the model, or the wire API it is reached
// with, is all that drifted.
func onlyModel(rep *record.DriftReport) bool {
	for _, it := range rep.Identity {
		if it.Field != "model" && it.Field != "wireApi" {
			return false
		}
	}
	return len(rep.Identity) > 0 && len(rep.Skills.Added)+len(rep.Skills.Removed)+len(rep.Skills.Changed)+len(rep.Resources) == 0
}

// watched are the skills whose every file is compared: active skills and
// skills with an allowed script.
func (r *runner) watched() map[string]bool {
	w := r.acts.Names()
	for _, e := range r.opts.AllowSkillScripts {
		if s, _, ok := strings.Cut(e, ":"); ok {
			w[s] = true
		}
	}
	return w
}

// ownCreations takes out of the skill changes the skills this run itself
// promoted (skill.created in its verified journal) whose live copy is
// still exactly the version it promoted: they are the run's own work,
// not drift. It reports whether such skills exist, which also explains a
// registry digest that differs only by them.
func (r *runner) ownCreations(now *skills.Registry, ch *skills.Changes) bool {
	if r.resumed == nil || len(r.resumed.CreatedSkills) == 0 {
		return false
	}
	// The run's promotions whose live copy is still that version.
	intact := map[string]bool{}
	for _, c := range r.resumed.CreatedSkills {
		if c.Outcome != record.ForgePromoted {
			continue
		}
		s, found := now.Lookup(c.Skill)
		intact[c.Skill] = found && store.VersionOf(s) == c.Version
	}
	keep := func(names []string) []string {
		return slices.DeleteFunc(names, func(n string) bool { return intact[n] })
	}
	ch.Added, ch.Changed = keep(ch.Added), keep(ch.Changed)
	return slices.Contains(slices.Collect(maps.Values(intact)), true)
}

// snapshotCache opens the persistent snapshot cache for a scan, or nil:
// without --snapshot-cache, or when the directory cannot be used (said
// once on stderr; the scan then reads every file, as without a cache).
func (r *runner) snapshotCache(opts skills.ScanOptions) *skills.SnapshotCache {
	if r.opts.SnapshotCache == "" {
		return nil
	}
	c, err := skills.OpenSnapshotCache(r.opts.SnapshotCache, opts)
	if err != nil {
		r.progress("snapshot cache not used: %v", err)
		return nil
	}
	return c
}

// contentScan runs the content scan over reg with a findings cache: the
// caller's (a batch or pipeline shares one), else one kept in the
// snapshot cache directory (saved at once: a cache that cannot be written
// only costs the next run a scan), else none.
func (r *runner) contentScan(reg *skills.Registry) {
	c := r.opts.Audits
	if c == nil && r.opts.SnapshotCache != "" {
		c = audit.OpenCache(r.opts.SnapshotCache)
		defer c.Save()
	}
	r.findings, r.critical = c.Registry(reg)
}
