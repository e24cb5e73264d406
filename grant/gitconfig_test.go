package grant

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestConfigTargets(t *testing.T) {
	ws := t.TempDir()
	gitdir := filepath.Join(ws, ".git")
	if err := os.MkdirAll(gitdir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(gitdir, "config"), "[core]\n\thooksPath = .husky/_ ; husky\n\tfsmonitor = touch x; false\n[include]\n\tpath = ../.gitconfig\n[includeIf \"gitdir:~/x/\"]\n\tpath = \"../more.cfg\"\n")
	write(filepath.Join(ws, ".gitconfig"), "[core]\n\tsshCommand = tools/ssh -v\n[include]\n\tpath = .gitconfig\n")
	var got []string
	configTargets(filepath.Join(gitdir, "config"), ws, 0, &got)
	for _, want := range []string{".husky/_", ".gitconfig", "more.cfg", "tools/ssh"} {
		if !slices.Contains(got, filepath.Join(ws, want)) {
			t.Errorf("%s not among %v", want, got)
		}
	}
	if slices.Contains(got, filepath.Join(ws, "touch")) {
		t.Errorf("a command without a path named a file: %v", got)
	}
}

func FuzzConfigTargets(f *testing.F) {
	f.Add("[core]\n\thooksPath = .husky/_\n[include]\npath=x\n")
	f.Add("[includeIf \"a\"] path = \"q\"\n[core] fsmonitor = ./a b\n")
	f.Fuzz(func(t *testing.T, s string) {
		dir := t.TempDir()
		cfg := filepath.Join(dir, "config")
		if err := os.WriteFile(cfg, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		var got []string
		configTargets(cfg, dir, 0, &got)
		for _, p := range got {
			if !filepath.IsAbs(p) {
				t.Fatalf("relative target %q", p)
			}
		}
	})
}
