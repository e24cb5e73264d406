package run

import (
	"context"
	"fmt"

	"github.com/harness-dev/harness/audit"
	"github.com/harness-dev/harness/cfc"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/skills"
	"github.com/harness-dev/harness/store"
	"github.com/harness-dev/harness/workspace"
)

// reloadCreated adds a skill this run just promoted to the run's registry
// (--reload-created): read from the forge root, held to the version the
// store promoted, journaled as registry.delta before it can be loaded.
func (r *runner) reloadCreated(ctx context.Context, c record.SkillCreated) error {
	if r.registry == nil {
		return nil
	}
	reg, err := skills.Scan(ctx, skills.ScanOptions{Roots: []string{c.Root}, Workspace: r.res.workspace,
		SandboxWorkspace: workspace.DefaultSandbox, Limits: r.registry.Limits, Now: r.now})
	if err != nil {
		return fmt.Errorf("reload %s: %w", c.Skill, err)
	}
	s, ok := reg.Lookup(c.Skill)
	if !ok {
		return fmt.Errorf("reload %s: it is not in %s after promotion", c.Skill, c.Root)
	}
	if v := store.VersionOf(s); v != c.Version {
		return fmt.Errorf("reload %s: the live copy (%s) is not the version promoted (%s); it changed in between", c.Skill, v, c.Version)
	}
	if _, err := r.journal.Append(record.EventRegistryDelta, record.RegistryDelta{Skill: *s, Version: c.Version, CallID: c.CallID}); err != nil {
		return err
	}
	r.applyDelta(*s)
	return nil
}

// applyDelta puts a skill into the run's registry, replacing an earlier
// version of the same name, and scans it so that enforce-strict treats it
// as any other skill.
func (r *runner) applyDelta(s skills.Skill) {
	replaced := false
	for i := range r.registry.Skills {
		if r.registry.Skills[i].Name == s.Name && r.registry.Skills[i].ShadowedBy == "" {
			r.registry.Skills[i], replaced = s, true
			break
		}
	}
	if !replaced {
		r.registry.Skills = append(r.registry.Skills, s)
	}
	delete(r.critical, s.Name)
	for _, f := range audit.Skill(&s) {
		if f.Severity == cfc.SeverityCritical {
			if r.critical == nil {
				r.critical = map[string][]string{}
			}
			r.critical[s.Name] = append(r.critical[s.Name], f.Rule)
		}
	}
}
