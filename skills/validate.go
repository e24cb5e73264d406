package skills

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// ValidateOptions configure Validate. Strict applies the Agent Skills
// specification's rules; otherwise the lenient rules of a run apply and
// only what would make a run skip a skill is an error.
type ValidateOptions struct {
	Strict bool
	Limits Limits
	// Check, when set, adds diagnostics of its own to each skill that
	// loaded (the caller's checks of files this package does not know,
	// such as a skill's mcp.json).
	Check func(*Skill) []Diagnostic
}

// Validation is the result of validating one path.
type Validation struct {
	Path        string            `json:"path"`
	Skills      []SkillValidation `json:"skills"`
	Diagnostics []Diagnostic      `json:"diagnostics"`
}

// SkillValidation is one skill directory's result.
type SkillValidation struct {
	Path        string       `json:"path"`
	Name        string       `json:"name,omitempty"`
	Valid       bool         `json:"valid"`
	Diagnostics []Diagnostic `json:"diagnostics"`
}

// HasErrors reports whether any error-severity diagnostic was found.
func (v *Validation) HasErrors() bool {
	if hasError(v.Diagnostics) {
		return true
	}
	for _, s := range v.Skills {
		if hasError(s.Diagnostics) {
			return true
		}
	}
	return false
}

// Validate checks p, a skill directory (holding SKILL.md) or a root of
// skills. Paths in the result are p joined with each skill's directory.
func Validate(ctx context.Context, p string, opts ValidateOptions) (*Validation, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		if filepath.Base(p) != "SKILL.md" {
			return nil, fmt.Errorf("%s is neither a directory nor a SKILL.md file", p)
		}
		p = filepath.Dir(p)
	}
	sc, err := newScanner([]string{p}, "", "", opts.Limits.withDefaults())
	if err != nil {
		return nil, err
	}
	defer sc.close()
	sc.validating = true
	r := sc.roots[0]
	var cands []candidate
	if isSkillDir(r.path).ok {
		cands = []candidate{{root: r, dir: r.path, rel: "."}}
	} else if cands, err = sc.discover(ctx, r); err != nil {
		return nil, err
	}
	v := &Validation{Path: p, Skills: []SkillValidation{}}
	var loaded []Skill
	var loadedAt []int
	for _, c := range cands {
		display := p
		if c.rel != "." {
			display = filepath.Join(p, filepath.FromSlash(c.rel))
		}
		s, diags, ok := sc.load(c, opts.Strict, new(Skill), nil)
		sv := SkillValidation{Path: display}
		if ok {
			sv.Name = s.Name
			s.Diagnostics = append(s.Diagnostics, diags...)
			for _, res := range s.Resources {
				s.Diagnostics = append(s.Diagnostics, res.Diagnostics...)
			}
			loaded = append(loaded, *s)
			loadedAt = append(loadedAt, len(v.Skills))
		} else {
			if s != nil {
				// Skipped by a run, but checked through: every problem
				// at once.
				diags = append(diags, s.Diagnostics...)
				for _, res := range s.Resources {
					diags = append(diags, res.Diagnostics...)
				}
			}
			sv.Diagnostics = sortDiagnostics(diags)
		}
		v.Skills = append(v.Skills, sv)
	}
	resolvePrecedence(loaded)
	for i, s := range loaded {
		sv := &v.Skills[loadedAt[i]]
		if opts.Check != nil {
			s.Diagnostics = append(s.Diagnostics, opts.Check(&loaded[i])...)
		}
		sv.Diagnostics = sortDiagnostics(s.Diagnostics)
	}
	for i := range v.Skills {
		v.Skills[i].Valid = !hasError(v.Skills[i].Diagnostics)
	}
	v.Diagnostics = sortDiagnostics(sc.diags)
	return v, nil
}
