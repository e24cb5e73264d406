package gitsource_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

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

// TestFetchOverHTTPAndFile fetches a repository from a real git server
// (git http-backend) and from file://, resolves refs and walks a tree.
func TestFetchOverHTTPAndFile(t *testing.T) {
	testenv.NeedGit(t)
	dir := t.TempDir()
	first, second := makeRepo(t, dir)
	srv := testenv.GitServer(t, dir)
	for _, url := range []string{srv + "/skills.git", "file://" + filepath.Join(dir, "skills.git")} {
		t.Run(url[:4], func(t *testing.T) {
			ctx := context.Background()
			r, err := gitsource.Fetch(ctx, url, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			for ref, want := range map[string]string{"": second, "main": second, "v1": first, first: first, first[:10]: first} {
				if got, err := r.Resolve(ref); err != nil || got != want {
					t.Errorf("Resolve(%q) = %s, %v; want %s", ref, got, err, want)
				}
			}
			if _, err := r.Resolve("nope"); err == nil {
				t.Error("an unknown ref resolved")
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
