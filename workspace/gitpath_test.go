package workspace

import (
	"os"
	"path/filepath"
	"testing"
)

// TestGitNeverMade: no write or directory a tool makes passes through or
// ends in a .git, by its name or through a link, and nothing is made on
// the way before the refusal; names that merely contain .git are fine.
func TestGitNeverMade(t *testing.T) {
	host, _ := filepath.EvalSymlinks(t.TempDir())
	os.MkdirAll(filepath.Join(host, "nested", ".git"), 0o755)
	os.MkdirAll(filepath.Join(host, "ok"), 0o755)
	os.Symlink("nested/.git", filepath.Join(host, "to-git"))
	os.Symlink(".", filepath.Join(host, "nested", "here"))
	w, err := Open(host, DefaultSandbox, ".", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.GitAllowed = []string{filepath.Join(host, "allowed")}
	for _, c := range []struct {
		op, rel, code string
	}{
		{"write", "a/.git/config", "protected_path"},
		{"write", "a/.git", "protected_path"},
		{"write", "a/.GIT", "protected_path"},
		{"write", "nested/.git/hooks/pre-commit", "protected_path"},
		{"write", "to-git/config", "protected_path"},
		{"write", "nested/here/.git", "protected_path"},
		{"mkdir", "ok/.git", "protected_path"},
		{"mkdirall", "b/c/.git/hooks", "protected_path"},
		{"write", "ok/x.git", ""},
		{"write", "ok/.gitignore", ""},
		{"mkdir", "ok/.github", ""},
		{"write", "allowed/.git/config", ""},
	} {
		var err error
		switch c.op {
		case "write":
			err = w.WriteFile(c.rel, []byte("x"))
		case "mkdir":
			err = w.Mkdir(c.rel)
		case "mkdirall":
			err = w.MkdirAll(c.rel)
		}
		got := ""
		if err != nil {
			got = AsRefusal(err).Code
		}
		if got != c.code {
			t.Errorf("%s %s: %v, want %q", c.op, c.rel, err, c.code)
		}
	}
	for _, p := range []string{"a", "b", "nested/.git/config", "nested/.git/hooks"} {
		if _, err := os.Lstat(filepath.Join(host, p)); err == nil {
			t.Errorf("%s was made before the refusal", p)
		}
	}
}
