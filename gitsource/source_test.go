package gitsource_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/gitsource"
	"github.com/harness-dev/harness/internal/testenv"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want gitsource.Source
		err  string
	}{
		{"owner/repo", gitsource.Source{URL: "https://github.com/owner/repo.git"}, ""},
		{"owner/repo@v1.2", gitsource.Source{URL: "https://github.com/owner/repo.git", Ref: "v1.2"}, ""},
		{"owner/repo#skills/pdf@main", gitsource.Source{URL: "https://github.com/owner/repo.git", Path: "skills/pdf", Ref: "main"}, ""},
		{"https://git.example/team/skills.git@v2#pdf", gitsource.Source{URL: "https://git.example/team/skills.git", Path: "pdf", Ref: "v2"}, ""},
		{"ssh://git@git.example/team/skills.git", gitsource.Source{URL: "ssh://git@git.example/team/skills.git"}, ""},
		{"ssh://git@git.example/team/skills.git@abc123", gitsource.Source{URL: "ssh://git@git.example/team/skills.git", Ref: "abc123"}, ""},
		{"file:///srv/git/skills.git#a/./b", gitsource.Source{URL: "file:///srv/git/skills.git", Path: "a/b"}, ""},
		{"file:///srv/git/skills.git#../up", gitsource.Source{}, "leaves the repository"},
		{"file:///srv/git/skills.git#/abs", gitsource.Source{}, "leaves the repository"},
		{"file://relative/path", gitsource.Source{}, "absolute path"},
		{"ftp://x/y", gitsource.Source{}, "scheme"},
		{"just-a-name", gitsource.Source{}, "neither a URL"},
		{"a/b/c", gitsource.Source{}, "neither a URL"},
		{"owner/repo@--upload-pack=x", gitsource.Source{}, "not a ref"},
		{"owner/repo#p@", gitsource.Source{}, "empty ref"},
		{"owner/repo@v1#p@v2", gitsource.Source{}, "two refs"},
		{"", gitsource.Source{}, "give URL"},
	} {
		got, err := gitsource.Parse(tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("Parse(%q) = %+v, %v; want an error with %q", tc.in, got, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("Parse(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"owner/repo@v1#p", "https://h/r.git#a/b@c", "file:///x#../y", "ssh://git@h/r@x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		src, err := gitsource.Parse(s)
		if err != nil {
			return
		}
		if strings.HasPrefix(src.Path, "/") || src.Path == ".." || strings.HasPrefix(src.Path, "../") || strings.HasPrefix(src.Ref, "-") {
			t.Fatalf("Parse(%q) = %+v", s, src)
		}
	})
}

// makeRepo builds a bare repository under dir/NAME.git from a work tree
// with a skill, a tag v1 and a later commit on main.
func makeRepo(t *testing.T, dir string) (first, second string) {
	work := t.TempDir()
	testenv.Git(t, work, "init", "-q", "-b", "main")
	testenv.WriteTree(t, work, map[string]string{"skills/pdf/SKILL.md": "---\nname: pdf\ndescription: PDFs. Use for PDFs.\n---\nbody\n"})
	os.Symlink("SKILL.md", filepath.Join(work, "skills/pdf/link.md"))
	testenv.Git(t, work, "add", "-A")
	testenv.Git(t, work, "commit", "-q", "-m", "one")
	testenv.Git(t, work, "tag", "-a", "v1", "-m", "v1")
	first = testenv.Git(t, work, "rev-parse", "HEAD")
	testenv.WriteTree(t, work, map[string]string{"skills/pdf/notes.md": "more\n"})
	testenv.Git(t, work, "add", "-A")
	testenv.Git(t, work, "commit", "-q", "-m", "two")
	second = testenv.Git(t, work, "rev-parse", "HEAD")
	testenv.Git(t, dir, "clone", "-q", "--bare", work, "skills.git")
	return first, second
}

// TestFetchOverHTTPAndFile fetches from a real git server (git
// http-backend) and from file://: each ref (the default branch, a branch,
// a tag, a commit id, a prefix of a commit a ref names) brings that one
// commit and nothing older; a ref the remote lacks is a *RefError naming
// it.
func TestFetchOverHTTPAndFile(t *testing.T) {
	testenv.NeedGit(t)
	dir := t.TempDir()
	first, second := makeRepo(t, dir)
	srv := testenv.GitServer(t, dir)
	lim := gitsource.DefaultLimits()
	for _, url := range []string{srv + "/skills.git", "file://" + filepath.Join(dir, "skills.git")} {
		t.Run(url[:4], func(t *testing.T) {
			ctx := context.Background()
			for ref, want := range map[string]string{"": second, "main": second, "v1": first, first: first, first[:10]: first, second[:8]: second} {
				r, err := gitsource.Fetch(ctx, url, ref, t.TempDir(), lim)
				if err != nil || r.Commit != want {
					t.Errorf("Fetch(%q) = %v; want %s", ref, err, want)
					continue
				}
				if want == second && r.Has(first) {
					t.Errorf("Fetch(%q) brought history: %s is there too", ref, first)
				}
			}
			for _, ref := range []string{"nope", strings.Repeat("0", 40), "abcdef1"} {
				_, err := gitsource.Fetch(ctx, url, ref, t.TempDir(), lim)
				var re *gitsource.RefError
				if !errors.As(err, &re) || !strings.Contains(err.Error(), fmt.Sprintf("has no tag, branch or commit %q", ref)) {
					t.Errorf("Fetch(%q) = %v; want a RefError naming it", ref, err)
				}
			}
			r, err := gitsource.FetchCommit(ctx, url, "main", first, t.TempDir(), lim)
			if err != nil || r.Commit != first || !r.Has(first) || r.Has(second) {
				t.Fatalf("FetchCommit(%s) = %+v, %v", first, r, err)
			}
			var names []string
			err = r.Walk(first, "skills", func(e gitsource.Entry) error {
				names = append(names, e.Name)
				switch e.Name {
				case "pdf/link.md":
					if e.Kind != gitsource.KindLink || e.Target != "SKILL.md" {
						t.Errorf("link entry %+v", e)
					}
				case "pdf/SKILL.md":
					rc, err := e.Open()
					if err != nil {
						return err
					}
					b, _ := io.ReadAll(rc)
					rc.Close()
					if !strings.Contains(string(b), "name: pdf") {
						t.Errorf("SKILL.md = %q", b)
					}
				}
				return nil
			})
			if err != nil || !slices.Equal(names, []string{"pdf", "pdf/SKILL.md", "pdf/link.md"}) {
				t.Errorf("walk = %v, %v", names, err)
			}
			for ref, want := range map[string]string{"": second, "main": second, "v1": first, "gone": ""} {
				if got, err := gitsource.RemoteRef(ctx, url, ref); err != nil || got != want {
					t.Errorf("RemoteRef(%q) = %q, %v; want %q", ref, got, err, want)
				}
			}
		})
	}
}

// TestFetchDumbHTTP: a server of plain files (git's dumb HTTP) cannot
// fetch shallow: Fetch says so, and a lock's pin falls back to the ref's
// history, which holds the pinned commit.
func TestFetchDumbHTTP(t *testing.T) {
	testenv.NeedGit(t)
	dir := t.TempDir()
	first, _ := makeRepo(t, dir)
	testenv.Git(t, filepath.Join(dir, "skills.git"), "update-server-info")
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := gitsource.Fetch(ctx, srv.URL+"/skills.git", "main", t.TempDir(), gitsource.DefaultLimits()); err == nil || !strings.Contains(err.Error(), "shallow") {
		t.Errorf("Fetch over dumb HTTP = %v; want git's word that it cannot fetch shallow", err)
	}
	r, err := gitsource.FetchCommit(ctx, srv.URL+"/skills.git", "main", first, t.TempDir(), gitsource.DefaultLimits())
	if err != nil || r.Commit != first {
		t.Fatalf("FetchCommit over dumb HTTP = %+v, %v", r, err)
	}
}

// TestFetchLimits serves a skill with a 2 MiB incompressible file over
// HTTP and fetches it under lowered limits: a server that filters leaves
// the file on the server and the walk names it; one that does not is
// stopped at the file limit, or, under it, the walk refuses the file; a
// git held to too little memory is stopped too. Each is a typed error.
func TestFetchLimits(t *testing.T) {
	testenv.NeedGit(t)
	dir, work := t.TempDir(), t.TempDir()
	testenv.WriteTree(t, work, map[string]string{"skills/pdf/SKILL.md": "---\nname: pdf\ndescription: PDFs. Use for PDFs.\n---\nbody\n"})
	big := make([]byte, 2<<20)
	rand.Read(big)
	if err := os.WriteFile(filepath.Join(work, "skills/pdf/big.bin"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	testenv.Git(t, work, "init", "-q", "-b", "main")
	testenv.Git(t, work, "add", "-A")
	testenv.Git(t, work, "commit", "-q", "-m", "one")
	testenv.Git(t, dir, "clone", "-q", "--bare", work, "plain.git")
	testenv.Git(t, dir, "clone", "-q", "--bare", work, "filters.git")
	testenv.Git(t, filepath.Join(dir, "filters.git"), "config", "uploadpack.allowFilter", "true")
	srv := testenv.GitServer(t, dir)
	ctx := context.Background()
	small := gitsource.Limits{File: 1 << 20, Blob: 256 << 10, Memory: 512 << 20}

	walk := func(r *gitsource.Repo) error {
		return r.Walk(r.Commit, "skills", func(gitsource.Entry) error { return nil })
	}
	t.Run("filtered", func(t *testing.T) {
		to := t.TempDir()
		r, err := gitsource.Fetch(ctx, srv+"/filters.git", "", to, small)
		if err != nil {
			t.Fatal(err)
		}
		var be *gitsource.BlobError
		if err := walk(r); !errors.As(err, &be) || be.Size != -1 || be.Path != "skills/pdf/big.bin" || !strings.Contains(err.Error(), "left on the server") {
			t.Errorf("walk = %v; want the blob named as left on the server", err)
		}
		if n := du(t, to); n > 256<<10 {
			t.Errorf("the fetch wrote %d bytes", n)
		}
	})
	t.Run("over the file limit", func(t *testing.T) {
		_, err := gitsource.Fetch(ctx, srv+"/plain.git", "main", t.TempDir(), small)
		var le *gitsource.LimitError
		if !errors.As(err, &le) || le.What != "pack" {
			t.Errorf("Fetch = %v; want a pack LimitError", err)
		}
	})
	t.Run("under the file limit", func(t *testing.T) {
		lim := small
		lim.File = 16 << 20
		r, err := gitsource.Fetch(ctx, srv+"/plain.git", "main", t.TempDir(), lim)
		if err != nil {
			t.Fatal(err)
		}
		var be *gitsource.BlobError
		if err := walk(r); !errors.As(err, &be) || be.Size != 2<<20 {
			t.Errorf("walk = %v; want the blob refused by its size", err)
		}
	})
}

// TestFetchMemoryLimit: two nearly equal 32 MiB blobs reach git as a
// blob and a delta against it, which index-pack resolves in memory; held
// to less address space than that takes, the fetch is stopped with a
// *LimitError, and under the default it completes.
func TestFetchMemoryLimit(t *testing.T) {
	testenv.NeedGit(t)
	dir, work := t.TempDir(), t.TempDir()
	a := make([]byte, 32<<20)
	rand.Read(a)
	b := slices.Clone(a)
	copy(b[1000:], "changed")
	testenv.WriteTree(t, work, map[string]string{"a.bin": string(a), "b.bin": string(b)})
	testenv.Git(t, work, "init", "-q", "-b", "main")
	testenv.Git(t, work, "-c", "core.compression=0", "add", "-A")
	testenv.Git(t, work, "commit", "-q", "-m", "one")
	testenv.Git(t, dir, "clone", "-q", "--bare", work, "delta.git")
	testenv.Git(t, filepath.Join(dir, "delta.git"), "repack", "-adq")
	srv := testenv.GitServer(t, dir)
	lim := gitsource.DefaultLimits()
	lim.Memory = 64 << 20
	_, err := gitsource.Fetch(context.Background(), srv+"/delta.git", "", t.TempDir(), lim)
	var le *gitsource.LimitError
	if !errors.As(err, &le) || le.What != "memory" {
		t.Errorf("Fetch under 64 MiB = %v; want a memory LimitError", err)
	}
	if _, err := gitsource.Fetch(context.Background(), srv+"/delta.git", "", t.TempDir(), gitsource.DefaultLimits()); err != nil {
		t.Errorf("Fetch under the default limits: %v", err)
	}
}

// du is the bytes of the regular files under dir.
func du(t *testing.T, dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			fi, _ := d.Info()
			n += fi.Size()
		}
		return nil
	})
	return n
}
