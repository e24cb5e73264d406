package grant

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// tree makes the entries of spec under a new directory: "d/" a
// directory, "l -> target" a link, anything else a file whose content
// follows "=".
func tree(t *testing.T, spec ...string) string {
	t.Helper()
	host, _ := filepath.EvalSymlinks(t.TempDir())
	for _, e := range spec {
		switch {
		case strings.HasSuffix(e, "/"):
			os.MkdirAll(filepath.Join(host, e), 0o755)
		case strings.Contains(e, " -> "):
			name, target, _ := strings.Cut(e, " -> ")
			os.MkdirAll(filepath.Dir(filepath.Join(host, name)), 0o755)
			if err := os.Symlink(strings.ReplaceAll(target, "$HOST", host), filepath.Join(host, name)); err != nil {
				t.Fatal(err)
			}
		default:
			name, content, _ := strings.Cut(e, "=")
			os.MkdirAll(filepath.Dir(filepath.Join(host, name)), 0o755)
			if err := os.WriteFile(filepath.Join(host, name), []byte(strings.ReplaceAll(content, "$HOST", host)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return host
}

// rels are the control paths inside host, relative; outside ones as
// "OUT:" and the path.
func rels(host string, ps []string) []string {
	var out []string
	for _, p := range ps {
		if r, err := filepath.Rel(host, p); err == nil && !strings.HasPrefix(r, "..") {
			out = append(out, filepath.ToSlash(r))
		} else {
			out = append(out, "OUT:"+p)
		}
	}
	slices.Sort(out)
	return out
}

// TestControlPaths: what the run-start walk finds and keeps read-only.
func TestControlPaths(t *testing.T) {
	outside, _ := filepath.EvalSymlinks(t.TempDir())
	os.MkdirAll(filepath.Join(outside, "r", ".git"), 0o755)
	for _, tc := range []struct {
		name string
		spec []string
		skip []string
		want []string
	}{
		{"a repository", []string{".git/hooks/", ".git/config=[core]", "src/a.go=x"}, nil, []string{".git"}},
		{"a submodule: gitfile with a relative gitdir, and .gitmodules",
			[]string{".git/modules/sub/", ".gitmodules=[submodule \"sub\"]", "sub/.git=gitdir: ../.git/modules/sub\n"}, nil,
			[]string{".git", ".git/modules/sub", ".gitmodules", "sub/.git"}},
		{"a gitfile with an absolute gitdir", []string{"repo/", "w/.git=gitdir: $HOST/repo\n"}, nil, []string{"repo", "w/.git"}},
		{"a gitfile naming a directory that holds a commondir",
			[]string{"main/.git/worktrees/wt/commondir=../..\n", "wt/.git=gitdir: ../main/.git/worktrees/wt\n"}, nil,
			[]string{"main/.git", "main/.git", "main/.git/worktrees/wt", "wt/.git"}},
		{"a gitfile naming a path outside the workspace", []string{"w/.git=gitdir: " + outside + "/r\n"}, nil, []string{"OUT:" + outside + "/r", "w/.git"}},
		{"a gitfile that is not one", []string{"w/.git=not a gitfile"}, nil, []string{"w/.git"}},
		{"a nested repository, deep", []string{"a/b/c/nested/.git/hooks/", "a/b/c/nested/x=1"}, nil, []string{"a/b/c/nested/.git"}},
		{"a nested submodule's .gitmodules", []string{"lib/.gitmodules=x", "lib/.git=gitdir: ../.git/modules/lib\n"}, nil,
			[]string{".git/modules/lib", "lib/.git", "lib/.gitmodules"}},
		{"a link named .git is kept as the link", []string{"real/", "w/.git -> ../real"}, nil, []string{"w/.git"}},
		{"a .git in capitals", []string{"w/.GIT/"}, nil, []string{"w/.GIT"}},
		{"a .git inside .harness is not looked for", []string{".harness/runs/r1/.git/", ".harness/x/.git=gitdir: /etc\n"}, nil, nil},
		{"nor under a path skipped", []string{"runs/r/.git/"}, []string{"runs"}, nil},
		{"nor through a link to a directory", []string{"w -> " + outside + "/r"}, nil, nil},
		{"nor inside a .git", []string{".git/modules/sub/.git/", "x.git/", ".gitx/"}, nil, []string{".git"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			host := tree(t, tc.spec...)
			var skip []string
			for _, s := range tc.skip {
				skip = append(skip, filepath.Join(host, s))
			}
			x, err := ScanGit(context.Background(), host, skip, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := rels(host, x.ControlPaths()); !slices.Equal(got, tc.want) {
				t.Errorf("control paths %v, want %v", got, tc.want)
			}
		})
	}
}

// TestGitSweep: what a sweep after a call finds, and what it leaves.
func TestGitSweep(t *testing.T) {
	base := []string{".git/hooks/", "sub/.git=gitdir: ../.git/modules/sub\n", ".git/modules/sub/", "nested/.git/config=x", "a/b/c/", "link/.git -> ../a", "allowed/",
		"store/proj/HEAD=ref: refs/heads/main\n", "store/proj/objects/", "store/proj/refs/", "proj/.git=gitdir: ../store/proj\n",
		"cfgd/.git/config=[core]\n\thooksPath = .husky/_\n", "cfgd/.husky/_/pre-commit=x",
		"gitdirs/v/HEAD=ref: refs/heads/main\n", "gitdirs/v/objects/", "gitdirs/v/refs/", "lnk -> gitdirs", "vl/.git=gitdir: ../lnk/v\n"}
	evil := func(h, rel string) {
		os.MkdirAll(filepath.Join(h, rel, "objects"), 0o755)
		os.MkdirAll(filepath.Join(h, rel, "refs"), 0o755)
		os.WriteFile(filepath.Join(h, rel, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
		os.WriteFile(filepath.Join(h, rel, "config"), []byte("[core]\n\tfsmonitor = evil\n"), 0o644)
	}
	for _, tc := range []struct {
		name   string
		change func(host string)
		want   []string
		gone   []string // paths that must not exist after the sweep
		back   []string // paths that must exist after it
		left   bool     // something could not be undone
	}{
		{"nothing changed", func(string) {}, nil, nil, nil, false},
		{"an ordinary file written", func(h string) { os.WriteFile(filepath.Join(h, "a/b/new.txt"), nil, 0o644) }, nil, nil, nil, false},
		{"a .git directory in a known directory", func(h string) { os.MkdirAll(filepath.Join(h, "a/b/.git/hooks"), 0o755) },
			[]string{"a/b/.git"}, []string{"a/b/.git"}, nil, false},
		{"a .git file deep in new directories", func(h string) {
			os.MkdirAll(filepath.Join(h, "a/new/deeper"), 0o755)
			os.WriteFile(filepath.Join(h, "a/new/deeper/.git"), []byte("gitdir: ../../evil\n"), 0o644)
		}, []string{"a/new/deeper/.git"}, []string{"a/new/deeper/.git"}, []string{"a/new/deeper"}, false},
		{"a .git link", func(h string) { os.Symlink("/etc", filepath.Join(h, "a/b/c/.git")) }, []string{"a/b/c/.git"}, []string{"a/b/c/.git"}, nil, false},
		{"a .GIT", func(h string) { os.MkdirAll(filepath.Join(h, "a/.GIT"), 0o755) }, []string{"a/.GIT"}, []string{"a/.GIT"}, nil, false},
		{"a submodule moved away with its directory", func(h string) {
			os.Rename(filepath.Join(h, "sub"), filepath.Join(h, "a/sub"))
			os.MkdirAll(filepath.Join(h, "a/.git/modules/sub"), 0o755)
		}, []string{"a/.git", "sub/.git (moved to a/sub/.git; moved back)"}, []string{"a/.git", "a/sub/.git"}, []string{"sub/.git"}, false},
		{"a nested repository moved, a new one in its place", func(h string) {
			os.Rename(filepath.Join(h, "nested"), filepath.Join(h, "a/b/nested"))
			os.MkdirAll(filepath.Join(h, "nested/.git"), 0o755)
			os.WriteFile(filepath.Join(h, "nested/.git/config"), []byte("evil"), 0o644)
		}, []string{"nested/.git", "nested/.git (moved to a/b/nested/.git; moved back)"}, []string{"a/b/nested/.git"}, []string{"nested/.git/config"}, false},
		{"a submodule moved away, a link to a nested repository in its place", func(h string) {
			os.Rename(filepath.Join(h, "sub"), filepath.Join(h, "a/sub"))
			os.Symlink("nested", filepath.Join(h, "sub"))
		}, []string{"sub/.git (moved to a/sub/.git; moved back)"}, []string{"a/sub/.git"}, []string{"nested/.git/config"}, false},
		{"a known link replaced", func(h string) {
			os.Remove(filepath.Join(h, "link/.git"))
			os.WriteFile(filepath.Join(h, "link/.git"), []byte("gitdir: /evil\n"), 0o644)
		}, []string{"link/.git", "link/.git (a link, replaced; made again)"}, nil, nil, false},
		{"a .git where the operator allows writes", func(h string) { os.MkdirAll(filepath.Join(h, "allowed/.git"), 0o755) }, nil, nil, []string{"allowed/.git"}, false},
		{"a separate git directory carried away with its parent, a new one in its place", func(h string) {
			os.Rename(filepath.Join(h, "store"), filepath.Join(h, "store.old"))
			evil(h, "store/proj")
		}, []string{"store (moved to store.old, and store/proj with it; moved back)"}, []string{"store.old", "store/proj/config"}, []string{"store/proj/HEAD"}, false},
		{"a separate git directory moved itself, a link in its place", func(h string) {
			os.Rename(filepath.Join(h, "store/proj"), filepath.Join(h, "a/proj"))
			evil(h, "a/evil")
			os.Symlink("../a/evil", filepath.Join(h, "store/proj"))
		}, []string{"a/evil/HEAD (made a/evil a git directory: HEAD beside objects and refs; HEAD removed)", "store/proj (moved to a/proj; moved back)"},
			[]string{"a/proj", "a/evil/HEAD"}, []string{"store/proj/HEAD"}, false},
		{"a path a config names carried away with its parent", func(h string) {
			os.Rename(filepath.Join(h, "cfgd/.husky"), filepath.Join(h, "cfgd/husky.old"))
			os.MkdirAll(filepath.Join(h, "cfgd/.husky/_"), 0o755)
			os.WriteFile(filepath.Join(h, "cfgd/.husky/_/post-index-change"), []byte("evil"), 0o755)
		}, []string{"cfgd/.husky (moved to cfgd/husky.old, and cfgd/.husky/_ with it; moved back)"},
			[]string{"cfgd/husky.old", "cfgd/.husky/_/post-index-change"}, []string{"cfgd/.husky/_/pre-commit"}, false},
		{"a directory above a separate git directory made a git directory", func(h string) { evil(h, "store") },
			[]string{"store/HEAD (made store a git directory: HEAD beside objects and refs; HEAD removed)"}, []string{"store/HEAD"}, []string{"store/proj/HEAD"}, false},
		{"a link on the way to a separate git directory pointed elsewhere", func(h string) {
			evil(h, "a/x/v")
			os.Remove(filepath.Join(h, "lnk"))
			os.Symlink("a/x", filepath.Join(h, "lnk"))
		}, []string{"a/x/v/HEAD (made a/x/v a git directory: HEAD beside objects and refs; HEAD removed)", "lnk (a link on the way to lnk/v, changed; made again)"},
			[]string{"a/x/v/HEAD"}, []string{"lnk/v/HEAD"}, false},
		{"a separate git directory moved where the sweep does not look", func(h string) {
			os.Mkdir(filepath.Join(h, ".harness"), 0o755)
			os.Rename(filepath.Join(h, "store"), filepath.Join(h, ".harness/store"))
			os.Symlink(".harness/store", filepath.Join(h, "store"))
		}, []string{"store/proj (replaced; the original is not found in the workspace; what held its path (store) was removed; it could NOT be moved back)"},
			[]string{"store"}, nil, true},
		{"a nested repository moved where the sweep does not look, a link in its place", func(h string) {
			os.Mkdir(filepath.Join(h, ".harness"), 0o755)
			os.Rename(filepath.Join(h, "nested"), filepath.Join(h, ".harness/nested"))
			evil(h, "a/evil")
			os.Symlink("/proc/self/cwd/a/evil", filepath.Join(h, "nested"))
		}, []string{"a/evil/HEAD (made a/evil a git directory: HEAD beside objects and refs; HEAD removed)",
			"nested/.git (gone: not found in the workspace; what held its path (nested) was removed; it could NOT be moved back)"},
			[]string{"nested"}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			host := tree(t, base...)
			x, err := ScanGit(context.Background(), host, nil, []string{filepath.Join(host, "allowed")})
			if err != nil {
				t.Fatal(err)
			}
			tc.change(host)
			changes := x.Sweep()
			got := Strings(changes)
			if !slices.Equal(got, tc.want) {
				t.Errorf("swept %q, want %q", got, tc.want)
			}
			if left := slices.ContainsFunc(changes, func(c Change) bool { return c.Left }); left != tc.left {
				t.Errorf("something left undone: %v, want %v", left, tc.left)
			}
			for _, p := range tc.gone {
				if _, err := os.Lstat(filepath.Join(host, p)); err == nil {
					t.Errorf("%s is still there", p)
				}
			}
			for _, p := range tc.back {
				if _, err := os.Lstat(filepath.Join(host, p)); err != nil {
					t.Errorf("%s: %v", p, err)
				}
			}
			if b, err := os.ReadFile(filepath.Join(host, "sub/.git")); err != nil || string(b) != "gitdir: ../.git/modules/sub\n" {
				t.Errorf("sub/.git is %q (%v)", b, err)
			}
			if fi, err := os.Lstat(filepath.Join(host, "sub")); err != nil || !fi.IsDir() {
				t.Errorf("sub is not a directory: %v", err)
			}
			if tc.name == "a known link replaced" {
				if l, err := os.Readlink(filepath.Join(host, "link/.git")); err != nil || l != "../a" {
					t.Errorf("link/.git is %q (%v), want the link to ../a", l, err)
				}
			}
			// What could not be put back is said again: it is still not there.
			if again := x.Sweep(); len(again) > 0 && !tc.left {
				t.Errorf("a second sweep found %q", again)
			}
		})
	}
}

// TestGitSweepKnowsALinkMadeAgain: a known link replaced is made again,
// and a later sweep that reads its directory (its ctime moved with a
// file written beside it) takes the new link for the known one: it is
// not removed as a new .git and made a third time.
func TestGitSweepKnowsALinkMadeAgain(t *testing.T) {
	host := tree(t, "a/", "link/.git -> ../a")
	x, err := ScanGit(context.Background(), host, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Both inodes are held elsewhere, so the link made again cannot
	// reuse the number of the one it replaces.
	os.Rename(filepath.Join(host, "link/.git"), filepath.Join(host, "a/held-link"))
	os.WriteFile(filepath.Join(host, "link/.git"), []byte("gitdir: /evil\n"), 0o644)
	os.Link(filepath.Join(host, "link/.git"), filepath.Join(host, "a/held-file"))
	if got := Strings(x.Sweep()); !slices.Equal(got, []string{"link/.git", "link/.git (a link, replaced; made again)"}) {
		t.Fatalf("first sweep: %q", got)
	}
	for i := range 3 {
		if err := os.WriteFile(filepath.Join(host, "link", "note.txt"), []byte{byte(i)}, 0o644); err != nil {
			t.Fatal(err)
		}
		if got := x.Sweep(); len(got) > 0 {
			t.Fatalf("sweep %d after the link was made again found %q", i+2, Strings(got))
		}
	}
	if l, err := os.Readlink(filepath.Join(host, "link/.git")); err != nil || l != "../a" {
		t.Errorf("link/.git is %q (%v), want the link to ../a", l, err)
	}
}

// TestGitSweepReadsOnlyChanges: a sweep reads only directories whose
// ctime moved (or was too recent to trust when last read), not the tree.
func TestGitSweepReadsOnlyChanges(t *testing.T) {
	var spec []string
	for i := range 50 {
		spec = append(spec, filepath.Join("d", string(rune('a'+i%26))+strings.Repeat("x", i/26), "f=1"))
	}
	host := tree(t, spec...)
	x, err := ScanGit(context.Background(), host, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Everything was just made: racy, read again once.
	x.Sweep()
	for rel, d := range x.dirs {
		d.racy = false
		x.dirs[rel] = d
	}
	os.MkdirAll(filepath.Join(host, "d/a/.git"), 0o755)
	before := x.listed
	if got := Strings(x.Sweep()); !slices.Equal(got, []string{"d/a/.git"}) {
		t.Errorf("swept %q", got)
	}
	if n := x.listed - before; n != 1 {
		t.Errorf("the sweep listed %d directories of %d, want 1 (d/a)", n, len(x.dirs))
	}
}

// FuzzParseGitfile: whatever a .git file holds, the parser returns a
// path without NUL and without surrounding white space, or nothing, and
// never panics.
func FuzzParseGitfile(f *testing.F) {
	for _, s := range []string{"gitdir: ../.git/modules/sub\n", "gitdir: /abs/path\r\n", "gitdir:x", "gitdir: \n", "gitdir: a\nb\n", "nothing", "gitdir: a\x00b", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		target, ok := ParseGitfile(b)
		if !ok {
			if target != "" {
				t.Fatalf("not ok but %q", target)
			}
			return
		}
		if target == "" || strings.IndexByte(target, 0) >= 0 || strings.TrimSpace(target) != target {
			t.Fatalf("ParseGitfile(%q) = %q", b, target)
		}
		if !strings.HasPrefix(string(b), "gitdir:") || !strings.Contains(string(b), target) {
			t.Fatalf("ParseGitfile(%q) = %q: not what the file says", b, target)
		}
	})
}
