package skills

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/internal/testenv"
)

func skillMD(name, desc, body string) string {
	return "---\nname: " + name + "\ndescription: " + desc + "\n---\n" + body
}

func scanOne(t *testing.T, root string, limits Limits) *Registry {
	t.Helper()
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := Scan(context.Background(), ScanOptions{Roots: []string{real}, Workspace: filepath.Dir(real), SandboxWorkspace: "/workspace", Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// allDiagnostics flattens registry, skill and resource diagnostics.
func allDiagnostics(reg *Registry) []Diagnostic {
	ds := append([]Diagnostic(nil), reg.Diagnostics...)
	for _, s := range reg.Skills {
		ds = append(ds, s.Diagnostics...)
		for _, r := range s.Resources {
			ds = append(ds, r.Diagnostics...)
		}
	}
	return ds
}

func findDiag(ds []Diagnostic, code string) (Diagnostic, bool) {
	for _, d := range ds {
		if d.Code == code {
			return d, true
		}
	}
	return Diagnostic{}, false
}

// TestScanDiagnostics has one row per diagnostic a scan can produce.
func TestScanDiagnostics(t *testing.T) {
	tests := []struct {
		name     string
		build    func(t *testing.T, root, outside string)
		limits   Limits
		code     string
		severity string
		loaded   []string // skills expected in the registry (effective and shadowed)
	}{
		{"frontmatter missing", func(t *testing.T, root, _ string) {
			testenv.WriteTree(t, root, map[string]string{"a/SKILL.md": "# no frontmatter\n"})
		}, Limits{}, CodeFrontmatterMissing, SeverityError, nil},
		{"frontmatter unclosed", func(t *testing.T, root, _ string) {
			testenv.WriteTree(t, root, map[string]string{"a/SKILL.md": "---\nname: a\ndescription: d\n# body\n"})
		}, Limits{}, CodeFrontmatterUnclosed, SeverityError, nil},
		{"invalid YAML", func(t *testing.T, root, _ string) {
			testenv.WriteTree(t, root, map[string]string{"a/SKILL.md": "---\nname: a\ndescription: [unclosed\n---\nbody\n"})
		}, Limits{}, CodeFrontmatterInvalid, SeverityError, nil},
		{"duplicate YAML key", func(t *testing.T, root, _ string) {
			testenv.WriteTree(t, root, map[string]string{"a/SKILL.md": "---\nname: a\nname: b\ndescription: d\n---\nbody\n"})
		}, Limits{}, CodeFrontmatterInvalid, SeverityError, nil},
		{"frontmatter not a mapping", func(t *testing.T, root, _ string) {
			testenv.WriteTree(t, root, map[string]string{"a/SKILL.md": "---\n- a\n- b\n---\nbody\n"})
		}, Limits{}, CodeFrontmatterNotMapping, SeverityError, nil},
		{"description missing", func(t *testing.T, root, _ string) {
			testenv.WriteTree(t, root, map[string]string{"a/SKILL.md": "---\nname: a\n---\nbody\n"})
		}, Limits{}, CodeDescriptionMissing, SeverityError, nil},
		{"binary SKILL.md", func(t *testing.T, root, _ string) {
			testenv.WriteTree(t, root, map[string]string{"a/SKILL.md": "---\nname: a\ndescription: d\x00\n---\n"})
		}, Limits{}, CodeSkillFileBinary, SeverityError, nil},
		{"SKILL.md too large", func(t *testing.T, root, _ string) {
			testenv.WriteTree(t, root, map[string]string{"a/SKILL.md": skillMD("a", "d", strings.Repeat("x", maxSkillFile))})
		}, Limits{}, CodeSkillFileTooLarge, SeverityError, nil},
		{"name missing falls back to the directory", func(t *testing.T, root, _ string) {
			testenv.WriteTree(t, root, map[string]string{"dir-name/SKILL.md": "---\ndescription: d\n---\nbody\n"})
		}, Limits{}, CodeNameMissing, SeverityWarning, []string{"dir-name"}},
		{"invalid name still loads", func(t *testing.T, root, _ string) {
			testenv.WriteTree(t, root, map[string]string{"Bad_Name/SKILL.md": skillMD("Bad_Name", "d", "")})
		}, Limits{}, CodeNameInvalid, SeverityWarning, []string{"Bad_Name"}},
		{"name differs from directory", func(t *testing.T, root, _ string) {
			testenv.WriteTree(t, root, map[string]string{"dir/SKILL.md": skillMD("other", "d", "")})
		}, Limits{}, CodeNameMismatch, SeverityWarning, []string{"other"}},
		{"name too long", func(t *testing.T, root, _ string) {
			n := strings.Repeat("a", 70)
			testenv.WriteTree(t, root, map[string]string{n + "/SKILL.md": skillMD(n, "d", "")})
		}, Limits{}, CodeFieldTooLong, SeverityWarning, []string{strings.Repeat("a", 70)}},
		{"duplicate name in one root", func(t *testing.T, root, _ string) {
			testenv.WriteTree(t, root, map[string]string{"a/SKILL.md": skillMD("x", "first", ""), "b/SKILL.md": skillMD("x", "second", "")})
		}, Limits{}, CodeDuplicateSkillName, SeverityWarning, []string{"x", "x"}},
		{"nested SKILL.md is a resource", func(t *testing.T, root, _ string) {
			testenv.WriteTree(t, root, map[string]string{"a/SKILL.md": skillMD("a", "d", ""), "a/inner/SKILL.md": skillMD("inner", "d", "")})
		}, Limits{}, CodeNestedSkillIgnored, SeverityInfo, []string{"a"}},
		{"broken link", func(t *testing.T, root, _ string) {
			testenv.WriteTree(t, root, map[string]string{"a/SKILL.md": skillMD("a", "d", "line one\n\nSee [gone](references/gone.md).\n")})
		}, Limits{}, CodeBrokenReference, SeverityWarning, []string{"a"}},
		{"link leaving the skill", func(t *testing.T, root, _ string) {
			testenv.WriteTree(t, root, map[string]string{"a/SKILL.md": skillMD("a", "d", "[up](../b/x.md)\n"), "b/x.md": "x"})
		}, Limits{}, CodeBrokenReference, SeverityWarning, []string{"a"}},
		{"symlinked skill directory outside the root", func(t *testing.T, root, outside string) {
			testenv.WriteTree(t, outside, map[string]string{"evil/SKILL.md": skillMD("evil", "d", "")})
			os.MkdirAll(root, 0o755)
			testenv.Must(t, os.Symlink(filepath.Join(outside, "evil"), filepath.Join(root, "evil")))
		}, Limits{}, CodeSkillOutsideRoot, SeverityWarning, nil},
		{"symlinked SKILL.md outside the root", func(t *testing.T, root, outside string) {
			testenv.WriteTree(t, outside, map[string]string{"SKILL.md": skillMD("a", "d", "")})
			os.MkdirAll(filepath.Join(root, "a"), 0o755)
			testenv.Must(t, os.Symlink(filepath.Join(outside, "SKILL.md"), filepath.Join(root, "a", "SKILL.md")))
		}, Limits{}, CodeSkillOutsideRoot, SeverityError, nil},
		{"symlinked resource outside the root", func(t *testing.T, root, outside string) {
			testenv.WriteTree(t, outside, map[string]string{"secret.txt": "s"})
			testenv.WriteTree(t, root, map[string]string{"a/SKILL.md": skillMD("a", "d", "")})
			testenv.Must(t, os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(root, "a", "secret.txt")))
		}, Limits{}, CodeResourceOutsideRoot, SeverityWarning, []string{"a"}},
		{"symlink cycle terminates", func(t *testing.T, root, _ string) {
			testenv.WriteTree(t, root, map[string]string{"a/SKILL.md": skillMD("a", "d", ""), "a/refs/x.md": "x"})
			testenv.Must(t, os.Symlink("..", filepath.Join(root, "a", "refs", "loop")))
		}, Limits{}, CodeSymlinkCycle, SeverityInfo, []string{"a"}},
		{"FIFO is skipped, never opened", func(t *testing.T, root, _ string) {
			testenv.WriteTree(t, root, map[string]string{"a/SKILL.md": skillMD("a", "d", "")})
			testenv.Must(t, syscall.Mkfifo(filepath.Join(root, "a", "pipe"), 0o644))
		}, Limits{}, CodeResourceNotRegular, SeverityWarning, []string{"a"}},
		{"a lower-case skill.md is named, not loaded", func(t *testing.T, root, _ string) {
			testenv.WriteTree(t, root, map[string]string{"a/SKILL.md": skillMD("a", "d", ""), "b/skill.md": skillMD("b", "d", "")})
		}, Limits{}, CodeSkillFileName, SeverityWarning, []string{"a"}},
		{"discovery depth limit", func(t *testing.T, root, _ string) {
			testenv.WriteTree(t, root, map[string]string{"1/2/3/deep/SKILL.md": skillMD("deep", "d", "")})
		}, Limits{DiscoveryDepth: 2}, CodeScanLimitReached, SeverityWarning, nil},
		{"discovery directory limit", func(t *testing.T, root, _ string) {
			testenv.WriteTree(t, root, map[string]string{"a/x": "", "b/x": "", "c/x": "", "d/e/SKILL.md": skillMD("e", "d", "")})
		}, Limits{DiscoveryDirs: 3}, CodeScanLimitReached, SeverityWarning, nil},
		{"resource file limit", func(t *testing.T, root, _ string) {
			testenv.WriteTree(t, root, map[string]string{"a/SKILL.md": skillMD("a", "d", ""), "a/1": "", "a/2": "", "a/3": ""})
		}, Limits{ResourceFiles: 2}, CodeScanLimitReached, SeverityWarning, []string{"a"}},
		{"resource depth limit", func(t *testing.T, root, _ string) {
			testenv.WriteTree(t, root, map[string]string{"a/SKILL.md": skillMD("a", "d", ""), "a/1/2/3/x": ""})
		}, Limits{ResourceDepth: 2}, CodeScanLimitReached, SeverityWarning, []string{"a"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			// outside is outside the workspace too (scanOne's workspace is
			// base): a link into the workspace is a linked skill.
			root, outside := filepath.Join(base, "skills"), filepath.Join(t.TempDir(), "outside")
			os.MkdirAll(root, 0o755)
			tc.build(t, root, outside)
			reg := scanOne(t, root, tc.limits)
			d, ok := findDiag(allDiagnostics(reg), tc.code)
			if !ok {
				t.Fatalf("no %s diagnostic; got %+v", tc.code, allDiagnostics(reg))
			}
			if d.Severity != tc.severity {
				t.Errorf("severity = %s, want %s", d.Severity, tc.severity)
			}
			if d.Detail == "" || d.Path == "" {
				t.Errorf("diagnostic lacks detail or path: %+v", d)
			}
			var names []string
			for _, s := range reg.Skills {
				names = append(names, s.Name)
			}
			if strings.Join(names, ",") != strings.Join(tc.loaded, ",") {
				t.Errorf("skills = %v, want %v", names, tc.loaded)
			}
		})
	}
}

func TestShadowingAcrossRoots(t *testing.T) {
	base := t.TempDir()
	a, b := filepath.Join(base, "a"), filepath.Join(base, "b")
	testenv.WriteTree(t, a, map[string]string{"x/SKILL.md": skillMD("x", "from a", "")})
	testenv.WriteTree(t, b, map[string]string{"x/SKILL.md": skillMD("x", "from b", ""), "y/SKILL.md": skillMD("y", "only b", "")})
	reg, err := Scan(context.Background(), ScanOptions{Roots: []string{a, b}})
	testenv.Must(t, err)
	s, ok := reg.Lookup("x")
	if !ok || s.Description != "from a" {
		t.Fatalf("Lookup(x) = %+v", s)
	}
	if got := strings.Join(reg.Available(), ","); got != "x,y" {
		t.Errorf("Available = %s", got)
	}
	var shadowed *Skill
	for i := range reg.Skills {
		if reg.Skills[i].ShadowedBy != "" {
			shadowed = &reg.Skills[i]
		}
	}
	if shadowed == nil || shadowed.Description != "from b" || shadowed.ShadowedBy != s.SkillPath {
		t.Fatalf("shadowed skill = %+v", shadowed)
	}
	if _, ok := findDiag(shadowed.Diagnostics, CodeSkillShadowed); !ok {
		t.Error("no skill-shadowed diagnostic")
	}
}

func TestFrontmatterVariants(t *testing.T) {
	for _, tc := range []struct{ name, content, wantDesc string }{
		{"BOM", "\xef\xbb\xbf---\nname: a\ndescription: with bom\n---\nbody\n", "with bom"},
		{"CRLF", "---\r\nname: a\r\ndescription: crlf\r\n---\r\nbody\r\n", "crlf"},
		{"dashes in a value", "---\nname: a\ndescription: \"a --- b\"\n---\nbody\n", "a --- b"},
		{"dashes in a block scalar", "---\nname: a\ndescription: |\n  first\n  ---\n  last\n---\nbody\n", "first\n---\nlast\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			testenv.WriteTree(t, root, map[string]string{"a/SKILL.md": tc.content})
			reg := scanOne(t, root, Limits{})
			s, ok := reg.Lookup("a")
			if !ok {
				t.Fatalf("skill not loaded: %+v", reg.Diagnostics)
			}
			if s.Description != tc.wantDesc {
				t.Errorf("description = %q, want %q", s.Description, tc.wantDesc)
			}
			if !strings.HasPrefix(tc.content[s.BodyOffset:], "body") {
				t.Errorf("bodyOffset %d points at %q", s.BodyOffset, tc.content[s.BodyOffset:])
			}
		})
	}
}

func TestResourceIndex(t *testing.T) {
	root := t.TempDir()
	testenv.WriteTree(t, root, map[string]string{
		"a/SKILL.md":              skillMD("a", "d", "Read [guide](references/guide.md) and ![logo](assets/logo.png).\n"),
		"a/references/guide.md":   "guide",
		"a/assets/logo.png":       "\x89PNG\x00",
		"a/templates/t.md":        "t",
		"a/scripts/run.sh":        "#!/bin/bash\necho hi\n",
		"a/scripts/tool.ts":       "console.log(1)\n",
		"a/scripts/env.ts":        "#!/usr/bin/env -S deno run --allow-read\n",
		"a/scripts/py":            "#!/usr/bin/env python3\n",
		"a/scripts/n.js":          "#!/usr/bin/env node\n",
		"a/scripts/s":             "#!/bin/sh\n",
		"a/scripts/x.bin":         "",
		"a/notes.txt":             "n",
		"a/.hidden/secret":        "h",
		"a/node_modules/m/i.js":   "m",
		"a/scripts/utf8-boundary": strings.Repeat("a", sniffLen-1) + "é",
	})
	big := filepath.Join(root, "a", "assets", "big.bin")
	f, err := os.Create(big)
	testenv.Must(t, err)
	testenv.Must(t, f.Truncate(20<<20))
	f.Close()
	testenv.Must(t, os.Chmod(filepath.Join(root, "a/scripts/run.sh"), 0o755))
	reg := scanOne(t, root, Limits{})
	s, _ := reg.Lookup("a")
	want := map[string]struct{ kind, content, runtime string }{
		"assets/big.bin":        {KindAsset, "binary", ""},
		"assets/logo.png":       {KindAsset, "binary", ""},
		"notes.txt":             {KindOther, "text", ""},
		"references/guide.md":   {KindReference, "text", ""},
		"scripts/env.ts":        {KindScript, "text", "deno"},
		"scripts/n.js":          {KindScript, "text", "node"},
		"scripts/py":            {KindScript, "text", "python"},
		"scripts/run.sh":        {KindScript, "text", "bash"},
		"scripts/s":             {KindScript, "text", "sh"},
		"scripts/tool.ts":       {KindScript, "text", "deno"},
		"scripts/utf8-boundary": {KindScript, "text", "unknown"},
		"scripts/x.bin":         {KindScript, "text", "unknown"},
		"templates/t.md":        {KindTemplate, "text", ""},
	}
	if len(s.Resources) != len(want) {
		var got []string
		for _, r := range s.Resources {
			got = append(got, r.Path)
		}
		t.Fatalf("resources = %v", got)
	}
	for i, r := range s.Resources {
		if i > 0 && s.Resources[i-1].Path >= r.Path {
			t.Errorf("resources not sorted at %s", r.Path)
		}
		w, ok := want[r.Path]
		if !ok {
			t.Errorf("unexpected resource %s", r.Path)
			continue
		}
		if r.Kind != w.kind || r.ContentKind != w.content || r.Runtime != w.runtime {
			t.Errorf("%s: kind %s content %s runtime %s, want %+v", r.Path, r.Kind, r.ContentKind, r.Runtime, w)
		}
		if r.SandboxPath != "/workspace/"+filepath.Base(root)+"/a/"+r.Path {
			t.Errorf("%s: sandbox path %s", r.Path, r.SandboxPath)
		}
	}
	guide, _ := s.Resource("references/guide.md")
	logo, _ := s.Resource("assets/logo.png")
	notes, _ := s.Resource("notes.txt")
	if !guide.Referenced || !logo.Referenced || notes.Referenced {
		t.Errorf("referenced: guide %v logo %v notes %v", guide.Referenced, logo.Referenced, notes.Referenced)
	}
	run, _ := s.Resource("scripts/run.sh")
	if run.Executable == nil || !*run.Executable || run.Shebang != "#!/bin/bash" {
		t.Errorf("run.sh: executable %v shebang %q", run.Executable, run.Shebang)
	}
	b, _ := s.Resource("assets/big.bin")
	zeros, _, _ := artifacts.DigestReader(strings.NewReader(strings.Repeat("\x00", 20<<20)))
	if b.Size != 20<<20 || b.Digest != zeros {
		t.Errorf("big.bin: size %d digest %s", b.Size, b.Digest)
	}
}

func TestReadSkillFile(t *testing.T) {
	root := t.TempDir()
	testenv.WriteTree(t, root, map[string]string{"a/SKILL.md": skillMD("a", "d", "body\n")})
	reg := scanOne(t, root, Limits{})
	s, _ := reg.Lookup("a")
	if b, err := ReadSkillFile(s); err != nil || !strings.Contains(string(b), "body") {
		t.Fatalf("ReadSkillFile = %q, %v", b, err)
	}
	testenv.WriteTree(t, root, map[string]string{"a/SKILL.md": skillMD("a", "d", "changed\n")})
	_, err := ReadSkillFile(s)
	ref, ok := err.(*Refusal)
	if !ok || ref.Code != "skill_snapshot_mismatch" {
		t.Fatalf("err = %v, want skill_snapshot_mismatch", err)
	}
}

func TestValidateStrictMessages(t *testing.T) {
	root := t.TempDir()
	long := strings.Repeat("a", 70)
	testenv.WriteTree(t, root, map[string]string{
		"good/SKILL.md":    skillMD("good", "fine", ""),
		"d/SKILL.md":       skillMD("x", "mismatch", ""),
		long + "/SKILL.md": skillMD(long, "long", ""),
		"extra/SKILL.md":   "---\nname: extra\ndescription: e\nb: 1\na: 2\nmetadata: notamap\n---\n",
		"desc/SKILL.md":    skillMD("desc", strings.Repeat("d", 1025), ""),
		"compat/SKILL.md":  "---\nname: compat\ndescription: c\ncompatibility: " + strings.Repeat("c", 501) + "\n---\n",
	})
	v, err := Validate(context.Background(), root, ValidateOptions{Strict: true})
	testenv.Must(t, err)
	var details []string
	for _, s := range v.Skills {
		for _, d := range s.Diagnostics {
			details = append(details, d.Severity+": "+d.Detail)
		}
	}
	all := strings.Join(details, "\n")
	for _, want := range []string{
		"error: Skill name '" + long + "' exceeds 64 character limit (70 chars)",
		"error: Directory name 'd' must match skill name 'x'",
		"error: Unexpected fields in frontmatter: a, b.",
		"error: Field 'metadata' must be a mapping",
		"error: Description exceeds 1024 character limit (1025 chars)",
		"error: Compatibility exceeds 500 character limit (501 chars)",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("missing %q in:\n%s", want, all)
		}
	}
	if !v.HasErrors() {
		t.Error("strict validation found no errors")
	}
	lenient, err := Validate(context.Background(), root, ValidateOptions{})
	testenv.Must(t, err)
	if lenient.HasErrors() {
		t.Errorf("lenient validation failed: %+v", lenient)
	}
	one, err := Validate(context.Background(), filepath.Join(root, "good"), ValidateOptions{Strict: true})
	testenv.Must(t, err)
	if one.HasErrors() || len(one.Skills) != 1 || !one.Skills[0].Valid {
		t.Errorf("good skill: %+v", one)
	}
}
