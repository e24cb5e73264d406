package workspace

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func readOnlyFixture(t *testing.T) (*Workspace, string) {
	t.Helper()
	host, _ := filepath.EvalSymlinks(t.TempDir())
	for _, d := range []string{".git/hooks", "docs", "out", "secret", "skills/s"} {
		os.MkdirAll(filepath.Join(host, d), 0o755)
	}
	os.WriteFile(filepath.Join(host, ".git", "config"), []byte("[core]\n"), 0o644)
	os.WriteFile(filepath.Join(host, "docs", "a"), []byte("a"), 0o644)
	os.WriteFile(filepath.Join(host, "secret", "key"), []byte("k"), 0o644)
	os.Symlink("../secret/key", filepath.Join(host, "docs", "to-secret"))
	os.Symlink(".git/hooks", filepath.Join(host, "hooks-link"))
	w, err := Open(host, DefaultSandbox, ".", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	if err := w.KeepReadOnly(filepath.Join(host, ".git"), filepath.Join(host, "skills")); err != nil {
		t.Fatal(err)
	}
	return w, host
}

// TestReadOnlyPaths: git's directory and skill roots can be read, never
// written, also through a link or a directory made on the way.
func TestReadOnlyPaths(t *testing.T) {
	w, host := readOnlyFixture(t)
	for _, rel := range []string{".git/hooks/pre-commit", ".git/config", "hooks-link/post-commit", "skills/s/SKILL.md", ".git/new/dir/file", "skills/new/SKILL.md"} {
		err := w.WriteFile(rel, []byte("#!/bin/sh\n"))
		if AsRefusal(err).Code != "protected_path" {
			t.Errorf("write %s: %v, want protected_path", rel, err)
		}
	}
	for _, rel := range []string{".git/new", "skills/new"} {
		if err := w.Mkdir(rel); AsRefusal(err).Code != "protected_path" {
			t.Errorf("mkdir %s: %v, want protected_path", rel, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(host, ".git", "new")); err == nil {
		t.Error("a directory was made inside .git")
	}
	if f, err := w.Open(".git/config"); err != nil {
		t.Errorf("reading .git/config: %v", err)
	} else {
		f.Close()
	}
	if err := w.WriteFile("out/ok", []byte("x")); err != nil {
		t.Errorf("an ordinary write: %v", err)
	}
}

// TestNarrowedWorkspace: a narrowed view reads only declared parts,
// writes only declared writable parts, lists only what leads to them, and
// judges a link by where it leads.
func TestNarrowedWorkspace(t *testing.T) {
	w, _ := readOnlyFixture(t)
	n := w.Narrow([]string{"docs"}, []string{"out"})
	for _, c := range []struct {
		op, rel, code string
	}{
		{"read", "docs/a", ""},
		{"read", "secret/key", "path_not_granted"},
		{"read", "docs/to-secret", "path_not_granted"},
		{"write", "out/x", ""},
		{"write", "docs/x", "path_not_granted"},
		{"write", "secret/x", "path_not_granted"},
		{"write", "x", "path_not_granted"},
		{"mkdir", "out/d", ""},
		{"mkdir", "d", "path_not_granted"},
	} {
		var err error
		switch c.op {
		case "read":
			var f *os.File
			if f, err = n.Open(c.rel); err == nil {
				f.Close()
			}
		case "write":
			var p *Pending
			if p, err = n.Create(c.rel, false); err == nil {
				err = p.Commit()
			}
		case "mkdir":
			err = n.Mkdir(c.rel)
		}
		got := ""
		if err != nil {
			got = AsRefusal(err).Code
		}
		if got != c.code {
			t.Errorf("%s %s: %v, want %q", c.op, c.rel, err, c.code)
		}
	}
	des, err := fs.ReadDir(n.FS(), ".")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	if len(names) != 2 || names[0] != "docs" || names[1] != "out" {
		t.Errorf("the root lists %v, want [docs out]", names)
	}
	// The whole workspace granted keeps .git read-only.
	all := w.Narrow(nil, []string{"."})
	if p, err := all.Create(".git/config", false); AsRefusal(err).Code != "protected_path" {
		if p != nil {
			p.Abort()
		}
		t.Errorf("write: [.] wrote .git/config: %v", err)
	}
}
