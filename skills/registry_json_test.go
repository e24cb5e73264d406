package skills

import (
	"bytes"
	"testing"

	"github.com/harness-dev/harness/artifacts"
)

func jsonSkillWith(rs ...Resource) *Skill {
	return &Skill{Name: "s", Description: "d", Frontmatter: map[string]any{"name": "s"}, Resources: rs, Diagnostics: []Diagnostic{}}
}

func checkSkillJSON(t *testing.T, s *Skill) {
	t.Helper()
	want, err := encodeIndented(s, "    ")
	if err != nil {
		t.Fatal(err)
	}
	got, err := appendSkillJSON([]byte("reused buffer"), s)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := bytes.CutPrefix(got, []byte("reused buffer"))
	if !ok {
		t.Fatalf("appendSkillJSON lost what its buffer held: %q", got)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("encodeSkill differs from encoding/json:\n%s\n---\n%s", got, want)
	}
}

// The registry's own resource encoding is what encoding/json writes, for
// the plain resources it handles and for those it hands back.
func TestResourceJSONMatchesEncoder(t *testing.T) {
	yes, no := true, false
	plain := Resource{Path: "scripts/run.sh", Kind: KindScript, HostPath: "/w/s/scripts/run.sh", SandboxPath: "/workspace/s/scripts/run.sh",
		Size: 12, Digest: artifacts.DigestString("x"), ContentKind: "text", Stat: "1:2:12:3:4", Diagnostics: []Diagnostic{}}
	with := func(f func(r *Resource)) Resource {
		r := plain
		f(&r)
		return r
	}
	for name, s := range map[string]*Skill{
		"no resources":    jsonSkillWith(),
		"nil resources":   {Name: "s", Diagnostics: []Diagnostic{}},
		"plain":           jsonSkillWith(plain, plain),
		"executable":      jsonSkillWith(with(func(r *Resource) { r.Executable, r.Shebang, r.Runtime = &yes, "#!/bin/bash", "bash" })),
		"not executable":  jsonSkillWith(with(func(r *Resource) { r.Executable, r.Referenced = &no, true })),
		"no stat":         jsonSkillWith(with(func(r *Resource) { r.Stat = "" })),
		"unicode":         jsonSkillWith(with(func(r *Resource) { r.Path = "références/é.md" })),
		"quote":           jsonSkillWith(with(func(r *Resource) { r.Path = `a"b\c` })),
		"control":         jsonSkillWith(with(func(r *Resource) { r.HostPath = "a\tb\x01\u2028" })),
		"html":            jsonSkillWith(with(func(r *Resource) { r.Path = "<a>&b" })),
		"bad utf8":        jsonSkillWith(with(func(r *Resource) { r.Path = "a\xffb" })),
		"nil diagnostics": jsonSkillWith(with(func(r *Resource) { r.Diagnostics = nil })),
		"diagnostics": jsonSkillWith(with(func(r *Resource) {
			r.Diagnostics = []Diagnostic{{Severity: "error", Code: "x", Detail: "d", Path: "p", Line: 2}}
		})),
	} {
		t.Run(name, func(t *testing.T) { checkSkillJSON(t, s) })
	}
}

func FuzzResourceJSON(f *testing.F) {
	f.Add("references/a.md", "/w/s/references/a.md", "#!/bin/sh", "1:2:3:4:5", int64(10), true, uint8(2))
	f.Add("a\"b", "<&>", "\u2028", "", int64(-1), false, uint8(0))
	f.Fuzz(func(t *testing.T, path, host, shebang, stat string, size int64, ref bool, exec uint8) {
		r := Resource{Path: path, Kind: resourceKind(path), HostPath: host, SandboxPath: "/workspace/" + path, Size: size,
			Digest: artifacts.DigestString(path), ContentKind: "text", Referenced: ref, Shebang: shebang, Stat: stat, Diagnostics: []Diagnostic{}}
		if exec > 0 {
			x := exec > 1
			r.Executable = &x
		}
		checkSkillJSON(t, jsonSkillWith(r, r))
	})
}

// The skill's own fields: the hand-written path for the common skill, and
// every way a skill leaves it.
func TestSkillJSONMatchesEncoder(t *testing.T) {
	yes, no := true, false
	plain := Resource{Path: "references/a.md", Kind: KindReference, HostPath: "/w/s/references/a.md", SandboxPath: "/workspace/s/references/a.md",
		Size: 3, Digest: artifacts.DigestString("a"), ContentKind: "text", Diagnostics: []Diagnostic{}}
	base := func(f func(s *Skill)) *Skill {
		s := &Skill{Name: "s", Description: "Does s. Use when s.", Root: "/w", SkillPath: "/w/s/SKILL.md", SkillDir: "/w/s",
			SandboxSkillPath: "/workspace/s/SKILL.md", SandboxSkillDir: "/workspace/s", Digest: artifacts.DigestString("s"),
			TreeDigest: artifacts.DigestString("t"), Frontmatter: map[string]any{"name": "s", "description": "Does s.", "license": "MIT"},
			Headings: []string{"S", "Usage"}, BodyOffset: 40, Resources: []Resource{plain}, Diagnostics: []Diagnostic{}, Eligible: &yes}
		f(s)
		return s
	}
	for name, s := range map[string]*Skill{
		"plain":                 base(func(*Skill) {}),
		"not eligible":          base(func(s *Skill) { s.Eligible = &no }),
		"no eligibility":        base(func(s *Skill) { s.Eligible = nil }),
		"no headings":           base(func(s *Skill) { s.Headings = nil }),
		"empty headings":        base(func(s *Skill) { s.Headings = []string{} }),
		"empty frontmatter":     base(func(s *Skill) { s.Frontmatter = map[string]any{} }),
		"nil frontmatter":       base(func(s *Skill) { s.Frontmatter = nil }),
		"nested frontmatter":    base(func(s *Skill) { s.Frontmatter["metadata"] = map[string]any{"a": "b"} }),
		"number in frontmatter": base(func(s *Skill) { s.Frontmatter["version"] = 2.0 }),
		"quote in frontmatter":  base(func(s *Skill) { s.Frontmatter["description"] = `say "hi"` }),
		"html in description":   base(func(s *Skill) { s.Description = "<b>&</b>" }),
		"unicode heading":       base(func(s *Skill) { s.Headings = []string{"Übersicht"} }),
		"no resources":          base(func(s *Skill) { s.Resources = []Resource{} }),
		"nil resources":         base(func(s *Skill) { s.Resources = nil }),
		"two resources":         base(func(s *Skill) { s.Resources = []Resource{plain, plain} }),
		"shadowed":              base(func(s *Skill) { s.ShadowedBy = "/w/t/SKILL.md" }),
		"linked":                base(func(s *Skill) { s.LinkedFrom = &SkillLink{Path: "/w/l"} }),
		"diagnostics":           base(func(s *Skill) { s.Diagnostics = []Diagnostic{{Severity: "warning", Code: "x", Detail: "d"}} }),
		"nil diagnostics":       base(func(s *Skill) { s.Diagnostics = nil }),
		"requirements":          base(func(s *Skill) { s.Requires = &Requirements{Bins: []string{"jq"}} }),
		"install hints":         base(func(s *Skill) { s.InstallHints = []string{"apt-get install jq"} }),
	} {
		t.Run(name, func(t *testing.T) { checkSkillJSON(t, s) })
	}
}

func FuzzSkillJSON(f *testing.F) {
	f.Add("s", "Does s.", "/w/s", "name", "license", "MIT", "Usage", 40, uint8(1))
	f.Add("a\"b", "<&>", "\u2028", "", "k\x00", "\xff", "", -1, uint8(0))
	f.Fuzz(func(t *testing.T, name, desc, dir, k1, k2, v2, heading string, offset int, elig uint8) {
		s := &Skill{Name: name, Description: desc, Root: dir, SkillPath: dir + "/SKILL.md", SkillDir: dir,
			Digest: artifacts.DigestString(dir), Frontmatter: map[string]any{k1: name, k2: v2}, Headings: []string{heading},
			BodyOffset: offset, Resources: []Resource{}, Diagnostics: []Diagnostic{}}
		if elig > 0 {
			e := elig > 1
			s.Eligible = &e
		}
		checkSkillJSON(t, s)
	})
}
