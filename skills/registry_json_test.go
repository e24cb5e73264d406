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
	got, err := encodeSkill(s)
	if err != nil {
		t.Fatal(err)
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
