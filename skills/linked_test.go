package skills

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/testenv"
)

// linkedWorkspace builds ws/skills/<name> and ws/.agents/skills/<name> ->
// ../../skills/<name>: the layout the skills-support spec describes.
func linkedWorkspace(t *testing.T) (ws string) {
	t.Helper()
	ws, _ = filepath.EvalSymlinks(t.TempDir())
	testenv.WriteTree(t, ws, map[string]string{
		"skills/pdf/SKILL.md":            skillMD("pdf", "Fills PDF forms. Use for forms.", "See [guide](references/guide.md).\n"),
		"skills/pdf/references/guide.md": "guide\n",
	})
	testenv.Must(t, os.MkdirAll(filepath.Join(ws, ".agents", "skills"), 0o755))
	testenv.Must(t, os.Symlink("../../skills/pdf", filepath.Join(ws, ".agents", "skills", "pdf")))
	return ws
}

func scanIn(t *testing.T, ws string, roots, external []string) *Registry {
	t.Helper()
	reg, err := Scan(context.Background(), ScanOptions{Roots: append(roots, external...), Workspace: ws, SandboxWorkspace: "/workspace"})
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func TestLinkedSkillInsideWorkspace(t *testing.T) {
	ws := linkedWorkspace(t)
	reg := scanIn(t, ws, []string{filepath.Join(ws, ".agents", "skills")}, nil)
	if len(reg.Skills) != 1 {
		t.Fatalf("skills = %+v, diagnostics %+v", reg.Skills, allDiagnostics(reg))
	}
	s := reg.Skills[0]
	target := filepath.Join(ws, "skills", "pdf")
	if s.SkillDir != target || s.SandboxSkillDir != "/workspace/skills/pdf" {
		t.Errorf("dir = %s (%s), want the canonical target %s", s.SkillDir, s.SandboxSkillDir, target)
	}
	if s.LinkedFrom == nil || s.LinkedFrom.Path != filepath.Join(ws, ".agents", "skills", "pdf") {
		t.Errorf("linkedFrom = %+v", s.LinkedFrom)
	}
	if _, ok := s.Resource("references/guide.md"); !ok {
		t.Errorf("resources of the target not listed: %+v", s.Resources)
	}
	if d, ok := findDiag(allDiagnostics(reg), CodeSkillOutsideRoot); ok {
		t.Errorf("unexpected %+v", d)
	}
	// The snapshot's own record is enough to restore precedence and the
	// digest: a decoded registry digests the same.
	data := encodeRegistry(t, reg)
	back, err := DecodeRegistry(data)
	if err != nil {
		t.Fatal(err)
	}
	if got := registryDigest(back.Limits, back.Skills); got != reg.Digest {
		t.Errorf("digest after decode = %s, want %s", got, reg.Digest)
	}
	// Re-pointing the link at an identical copy changes the digest.
	testenv.WriteTree(t, ws, map[string]string{
		"copy/pdf/SKILL.md":            skillMD("pdf", "Fills PDF forms. Use for forms.", "See [guide](references/guide.md).\n"),
		"copy/pdf/references/guide.md": "guide\n",
	})
	link := filepath.Join(ws, ".agents", "skills", "pdf")
	testenv.Must(t, os.Remove(link))
	testenv.Must(t, os.Symlink("../../copy/pdf", link))
	again := scanIn(t, ws, []string{filepath.Join(ws, ".agents", "skills")}, nil)
	if again.Digest == reg.Digest {
		t.Error("re-pointed link kept the registry digest")
	}
}

func TestLinkAndTargetBothDeclaredAreOneSkill(t *testing.T) {
	ws := linkedWorkspace(t)
	reg := scanIn(t, ws, []string{filepath.Join(ws, ".agents", "skills"), filepath.Join(ws, "skills")}, nil)
	if len(reg.Skills) != 1 {
		t.Fatalf("skills = %d, want 1 (the same directory twice): %+v", len(reg.Skills), reg.Skills)
	}
	ds := allDiagnostics(reg)
	if _, ok := findDiag(ds, CodeDuplicateSkillName); ok {
		t.Error("a link and its target were reported as a name conflict")
	}
	if _, ok := findDiag(ds, CodeSkillShadowed); ok {
		t.Error("a link and its target were reported as shadowing")
	}
	if _, ok := findDiag(ds, CodeSkillReachedTwice); !ok {
		t.Errorf("no %s note: %+v", CodeSkillReachedTwice, ds)
	}
	// Read through the declared root that holds it.
	if reg.Skills[0].Root != filepath.Join(ws, "skills") {
		t.Errorf("root = %s", reg.Skills[0].Root)
	}
}

func TestLinkLeavingWorkspaceStaysRefused(t *testing.T) {
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	away, _ := filepath.EvalSymlinks(t.TempDir())
	testenv.WriteTree(t, away, map[string]string{"evil/SKILL.md": skillMD("evil", "d", "")})
	testenv.Must(t, os.MkdirAll(filepath.Join(ws, "skills"), 0o755))
	testenv.Must(t, os.Symlink(filepath.Join(away, "evil"), filepath.Join(ws, "skills", "evil")))
	reg := scanIn(t, ws, []string{filepath.Join(ws, "skills")}, nil)
	if len(reg.Skills) != 0 {
		t.Fatalf("a link out of the workspace was followed: %+v", reg.Skills)
	}
	d, ok := findDiag(allDiagnostics(reg), CodeSkillOutsideRoot)
	if !ok || !strings.Contains(d.Detail, "--external-skills-root") {
		t.Errorf("diagnostic %+v does not say how to allow it", d)
	}
	// Declaring the target's directory as an external root allows it.
	reg = scanIn(t, ws, []string{filepath.Join(ws, "skills")}, []string{away})
	if len(reg.Skills) != 1 || reg.Skills[0].SandboxSkillDir != "/skills/"+filepath.Base(away)+"/evil" {
		t.Fatalf("skills = %+v", reg.Skills)
	}
}

func TestLinkedSkillFileLinksKeepTheRule(t *testing.T) {
	ws := linkedWorkspace(t)
	testenv.WriteTree(t, ws, map[string]string{"secret.txt": "s"})
	testenv.Must(t, os.Symlink("../../secret.txt", filepath.Join(ws, "skills", "pdf", "leak.txt")))
	reg := scanIn(t, ws, []string{filepath.Join(ws, ".agents", "skills")}, nil)
	if len(reg.Skills) != 1 {
		t.Fatalf("skills = %+v", reg.Skills)
	}
	if _, ok := reg.Skills[0].Resource("leak.txt"); ok {
		t.Error("a file link out of a linked skill was indexed")
	}
	if _, ok := findDiag(allDiagnostics(reg), CodeResourceOutsideRoot); !ok {
		t.Errorf("no %s: %+v", CodeResourceOutsideRoot, allDiagnostics(reg))
	}
}

func TestExternalRootComesLastAndHasItsOwnSandboxPath(t *testing.T) {
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	shared, _ := filepath.EvalSymlinks(t.TempDir())
	shared = filepath.Join(shared, "team-skills")
	testenv.WriteTree(t, ws, map[string]string{"skills/lint/SKILL.md": skillMD("lint", "local lint", "")})
	testenv.WriteTree(t, shared, map[string]string{
		"lint/SKILL.md":  skillMD("lint", "shared lint", ""),
		"style/SKILL.md": skillMD("style", "shared style", ""),
	})
	reg := scanIn(t, ws, []string{filepath.Join(ws, "skills")}, []string{shared})
	if len(reg.Roots) != 2 || !reg.Roots[1].External || reg.Roots[1].SandboxPath != "/skills/team-skills" {
		t.Fatalf("roots = %+v", reg.Roots)
	}
	lint, _ := reg.Lookup("lint")
	if lint.Description != "local lint" {
		t.Errorf("the external root won over --skills-root: %+v", lint)
	}
	style, ok := reg.Lookup("style")
	if !ok || style.SandboxSkillDir != "/skills/team-skills/style" || style.SandboxSkillPath != "/skills/team-skills/style/SKILL.md" {
		t.Errorf("style = %+v", style)
	}
}

func TestExternalLabelsAreUnique(t *testing.T) {
	got := ExternalLabels([]string{"/a/skills", "/b/skills", "/c/.agents", "/"})
	want := []string{"skills", "skills-2", "agents", "root"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("labels = %v, want %v", got, want)
	}
}

func encodeRegistry(t *testing.T, reg *Registry) []byte {
	t.Helper()
	var b strings.Builder
	if err := reg.StreamJSON(&b); err != nil {
		t.Fatal(err)
	}
	return []byte(b.String())
}

// A chain of links that ends outside the workspace is judged by where it
// ends, not by its first hop.
func TestLinkChainLeavingWorkspaceIsRefused(t *testing.T) {
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	away, _ := filepath.EvalSymlinks(t.TempDir())
	testenv.WriteTree(t, away, map[string]string{"evil/SKILL.md": skillMD("evil", "d", "")})
	testenv.WriteTree(t, ws, map[string]string{"skills/.keep": "", "hop/.keep": ""})
	testenv.Must(t, os.Symlink(filepath.Join(away, "evil"), filepath.Join(ws, "hop", "evil")))
	testenv.Must(t, os.Symlink("../hop/evil", filepath.Join(ws, "skills", "evil")))
	reg := scanIn(t, ws, []string{filepath.Join(ws, "skills")}, nil)
	if len(reg.Skills) != 0 {
		t.Fatalf("a chain out of the workspace was followed: %+v", reg.Skills)
	}
	if _, ok := findDiag(allDiagnostics(reg), CodeSkillOutsideRoot); !ok {
		t.Errorf("no %s: %+v", CodeSkillOutsideRoot, allDiagnostics(reg))
	}
}

// After the snapshot, the link is re-pointed out of the workspace: reads
// go through the recorded canonical directory, and the next scan (what a
// resume compares against) no longer has the skill.
func TestLinkRepointedAfterSnapshot(t *testing.T) {
	ws := linkedWorkspace(t)
	away, _ := filepath.EvalSymlinks(t.TempDir())
	testenv.WriteTree(t, away, map[string]string{"pdf/SKILL.md": skillMD("pdf", "evil twin", ""), "pdf/references/guide.md": "secret\n"})
	roots := []string{filepath.Join(ws, ".agents", "skills")}
	reg := scanIn(t, ws, roots, nil)
	link := filepath.Join(ws, ".agents", "skills", "pdf")
	testenv.Must(t, os.Remove(link))
	testenv.Must(t, os.Symlink(filepath.Join(away, "pdf"), link))
	s, _ := reg.Lookup("pdf")
	if !strings.HasPrefix(s.Root, ws) || !strings.HasPrefix(s.SkillDir, ws) {
		t.Fatalf("the snapshot reads through the link, not its target: %+v", s)
	}
	rr, err := ReadResource(s, "references/guide.md", 1<<10)
	if err != nil || string(rr.Content) != "guide\n" || !rr.DigestMatches {
		t.Errorf("read after re-pointing = %+v, %v; want the snapshotted target's file", rr, err)
	}
	again := scanIn(t, ws, roots, nil)
	if _, ok := again.Lookup("pdf"); ok {
		t.Error("the re-pointed link (now leaving the workspace) was followed")
	}
	ch, _ := Compare(reg, again, nil)
	if len(ch.Removed) != 1 {
		t.Errorf("changes = %+v, want pdf removed", ch)
	}
}

// A directory link inside a root that leads to a skill also found
// directly is one skill, whichever path the walk meets first; only paths
// through a followed link are resolved to find out.
func TestDirectoryLinkInsideRootIsOneSkill(t *testing.T) {
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	testenv.WriteTree(t, ws, map[string]string{"skills/group/pdf/SKILL.md": skillMD("pdf", "Fills PDF forms. Use for forms.", "")})
	testenv.Must(t, os.Symlink("group", filepath.Join(ws, "skills", "alias")))
	reg := scanIn(t, ws, []string{filepath.Join(ws, "skills")}, nil)
	if len(reg.Skills) != 1 {
		t.Fatalf("skills = %d, want 1: %+v", len(reg.Skills), reg.Skills)
	}
	if _, ok := findDiag(allDiagnostics(reg), CodeSkillReachedTwice); !ok {
		t.Errorf("no %s note: %+v", CodeSkillReachedTwice, allDiagnostics(reg))
	}
}
