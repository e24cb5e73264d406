package skills

import (
	"strings"

	"github.com/harness-dev/harness/artifacts"
)

// Changes lists skills added, removed or changed (SKILL.md, tree or
// location) between two snapshots.
type Changes struct {
	Added   []string `json:"added"`
	Removed []string `json:"removed"`
	Changed []string `json:"changed"`
}

// ResourceDrift is a changed file of a watched skill.
type ResourceDrift struct {
	Skill    string           `json:"skill"`
	Path     string           `json:"path"`
	Change   string           `json:"change"` // changed | removed | added
	Recorded artifacts.Digest `json:"recorded,omitempty"`
	Current  artifacts.Digest `json:"current,omitempty"`
}

// Compare reports what changed from was to now. For the watched skills
// every resource is compared as well.
func Compare(was, now *Registry, watched map[string]bool) (Changes, []ResourceDrift) {
	ch := Changes{Added: []string{}, Removed: []string{}, Changed: []string{}}
	res := []ResourceDrift{}
	a, b := effective(was), effective(now)
	for _, name := range was.Available() {
		s2, ok := b[name]
		if !ok {
			ch.Removed = append(ch.Removed, name)
			continue
		}
		s1 := a[name]
		if s1.Digest != s2.Digest || s1.TreeDigest != s2.TreeDigest || s1.SkillPath != s2.SkillPath {
			ch.Changed = append(ch.Changed, name)
		}
		if !watched[name] {
			continue
		}
		for _, r := range s1.Resources {
			cur, ok := s2.Resource(r.Path)
			switch {
			case !ok:
				res = append(res, ResourceDrift{Skill: name, Path: r.Path, Change: "removed", Recorded: r.Digest})
			case cur.Digest != r.Digest:
				res = append(res, ResourceDrift{Skill: name, Path: r.Path, Change: "changed", Recorded: r.Digest, Current: cur.Digest})
			}
		}
		for _, r := range s2.Resources {
			if _, ok := s1.Resource(r.Path); !ok {
				res = append(res, ResourceDrift{Skill: name, Path: r.Path, Change: "added", Current: r.Digest})
			}
		}
	}
	for _, name := range now.Available() {
		if _, ok := a[name]; !ok {
			ch.Added = append(ch.Added, name)
		}
	}
	return ch, res
}

func effective(reg *Registry) map[string]*Skill {
	m := map[string]*Skill{}
	for i := range reg.Skills {
		if reg.Skills[i].ShadowedBy == "" {
			m[reg.Skills[i].Name] = &reg.Skills[i]
		}
	}
	return m
}

// DescribeMissing says what a skill lacks, for people.
func DescribeMissing(m *Missing) string {
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

// DescribeHints joins install hints, for people.
func DescribeHints(h []string) string {
	if len(h) == 0 {
		return "install what is missing"
	}
	return strings.Join(h, "; ")
}
