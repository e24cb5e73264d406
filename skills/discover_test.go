package skills

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/zeebo/blake3"
	"golang.org/x/sys/unix"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/internal/testenv"
)

// Discovery recognises a skill directory by its SKILL.md, looked up
// beneath the root's descriptor, exactly as a lookup by path does.
func TestSkillDirAtRoot(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	testenv.WriteTree(t, root, map[string]string{
		"SKILL.md":               skillMD("root", "d", ""),
		"plain/SKILL.md":         skillMD("plain", "d", ""),
		"nested/deeper/SKILL.md": skillMD("deeper", "d", ""),
		"real.md":                skillMD("linked", "d", ""),
		"dir/SKILL.md/file":      "a directory named SKILL.md",
		"none/README.md":         "no skill here",
	})
	for name, target := range map[string]string{
		"linked/SKILL.md":   "../real.md",
		"dangling/SKILL.md": "../missing.md",
		"todir/SKILL.md":    "../dir",
	} {
		p := filepath.Join(root, name)
		testenv.Must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		testenv.Must(t, os.Symlink(target, p))
	}
	r, err := openScanRoot(root)
	testenv.Must(t, err)
	defer func() { r.fs.Close(); r.dir.Close() }()
	for _, tc := range []struct {
		rel       string
		ok, ownSt bool // a skill; with SKILL.md's own fingerprint (not a link)
	}{
		{".", true, true},
		{"plain", true, true},
		{"nested/deeper", true, true},
		{"linked", true, false},
		{"dangling", false, false},
		{"todir", false, false},
		{"dir", false, false},
		{"none", false, false},
		{"missing", false, false},
	} {
		got := isSkillDirAt(r, tc.rel)
		if got.ok != tc.ok || (got.st != statNums{}) != tc.ownSt {
			t.Errorf("%s: ok %v, fingerprint %v; want ok %v, fingerprint %v", tc.rel, got.ok, got.st != statNums{}, tc.ok, tc.ownSt)
		}
		if want := isSkillDir(filepath.Join(root, tc.rel)); got != want {
			t.Errorf("%s: beneath the descriptor %+v, by path %+v", tc.rel, got, want)
		}
	}

}

// A root renamed after it was opened, with another directory put under
// its name, does not redirect discovery: it lists and looks beneath the
// root it opened.
func TestDiscoveryStaysInTheOpenedRoot(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	testenv.WriteTree(t, root, map[string]string{"group/a/SKILL.md": skillMD("a", "d", ""), "b/SKILL.md": skillMD("b", "d", "")})
	sc, err := newScanner([]string{root}, "", "", DefaultLimits())
	testenv.Must(t, err)
	defer sc.close()
	testenv.Must(t, os.Rename(root, filepath.Join(base, "moved")))
	testenv.WriteTree(t, root, map[string]string{"impostor/SKILL.md": skillMD("impostor", "d", ""), "group/x/SKILL.md": skillMD("x", "d", "")})
	found, err := sc.discover(context.Background(), sc.roots[0])
	testenv.Must(t, err)
	var rels []string
	for _, c := range found {
		rels = append(rels, c.rel)
	}
	if want := []string{"b", "group/a"}; !slices.Equal(rels, want) {
		t.Errorf("discovered %q, want %q (the opened root's skills); diagnostics %v", rels, want, sc.diags)
	}
}

// A skill's resources are listed beneath the root that was opened, as
// they are read: a root renamed after discovery, with an impostor under
// its name, does not put the impostor's files in the registry.
func TestResourcesListedInTheOpenedRoot(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	testenv.WriteTree(t, root, map[string]string{
		"a/SKILL.md":           skillMD("a", "d", ""),
		"a/references/mine.md": "the opened root's",
	})
	sc, err := newScanner([]string{root}, "", "", DefaultLimits())
	testenv.Must(t, err)
	defer sc.close()
	found, err := sc.discover(context.Background(), sc.roots[0])
	testenv.Must(t, err)
	if len(found) != 1 {
		t.Fatalf("discovered %d skills, want 1", len(found))
	}
	testenv.Must(t, os.Rename(root, filepath.Join(base, "moved")))
	testenv.WriteTree(t, root, map[string]string{
		"a/SKILL.md":               skillMD("a", "d", ""),
		"a/references/impostor.md": "not the opened root's",
	})
	// Listed beneath the root's descriptor, and (as a scan lists) from
	// the skill's directory opened beneath it, digesting inline.
	dirfd, err := openDirBeneathFD(sc.roots[0], "a")
	testenv.Must(t, err)
	defer unix.Close(dirfd)
	var read atomic.Int64
	inline := &inlineDigest{buf: make([]byte, inlineMax), h: blake3.New(), read: &read}
	for _, fd := range []int{-1, dirfd} {
		rs, ds, _ := sc.listResources(found[0], &Skill{Name: "a"}, fd, inline)
		var paths []string
		for _, r := range rs {
			paths = append(paths, r.Path)
			if r.Digest != "" && r.Digest != artifacts.DigestBytes([]byte("the opened root's")) {
				t.Errorf("fd %d: %s digested as %s, not the opened root's file", fd, r.Path, r.Digest)
			}
		}
		if want := []string{"references/mine.md"}; !slices.Equal(paths, want) {
			t.Errorf("fd %d: resources %q, want %q; diagnostics %v", fd, paths, want, ds)
		}
	}
	// Inline digests need the directory's descriptor: only the second
	// listing has one.
	if read.Load() != 1 {
		t.Errorf("%d files digested inline, want 1", read.Load())
	}
}
