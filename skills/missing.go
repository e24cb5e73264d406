package skills

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Unloaded are the errors that kept a skill called name out of the
// registry: those of a SKILL.md in a directory of that name (the name a
// skill's directory must have), which a scan found and could not load.
// None when no such SKILL.md was found.
func (r *Registry) Unloaded(name string) []Diagnostic {
	if r == nil {
		return nil
	}
	var out []Diagnostic
	for _, d := range r.Diagnostics {
		if d.Severity == SeverityError && strings.EqualFold(filepath.Base(d.Path), "SKILL.md") && filepath.Base(filepath.Dir(d.Path)) == name {
			out = append(out, d)
		}
	}
	return out
}

// WhyMissing says why name is not a skill of the registry, for a command
// that was asked for it: a skill there that cannot be loaded, with its
// errors (file, line where known, code, what to change), or no such
// skill, with the ones there are. code is skill_invalid or
// skill_not_found.
func (r *Registry) WhyMissing(name string) (code, msg string) {
	if ds := r.Unloaded(name); len(ds) > 0 {
		why := make([]string, len(ds))
		for i, d := range ds {
			where := d.Path
			if d.Line > 0 {
				where = fmt.Sprintf("%s:%d", d.Path, d.Line)
			}
			why[i] = fmt.Sprintf("%s: %s (%s)", where, d.Detail, d.Code)
		}
		return "skill_invalid", fmt.Sprintf("skill %s exists but cannot be loaded: %s; fix its SKILL.md (`harness skills validate %s` lists every problem)", name, strings.Join(why, "; "), filepath.Dir(ds[0].Path))
	}
	list := "none"
	if avail := r.Available(); len(avail) > 0 {
		list = strings.Join(avail, ", ")
	}
	return "skill_not_found", fmt.Sprintf("skill not found: %s; available skills: %s", name, list)
}
