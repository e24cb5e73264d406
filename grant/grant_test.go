package grant

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/harness-dev/harness/scripts"
	"github.com/harness-dev/harness/skills"
	"github.com/harness-dev/harness/workspace"
)

func fixture(t *testing.T) *workspace.Workspace {
	t.Helper()
	host, _ := filepath.EvalSymlinks(t.TempDir())
	for _, d := range []string{".git/hooks", "docs", "skills/s"} {
		os.MkdirAll(filepath.Join(host, d), 0o755)
	}
	ws, err := workspace.Open(host, workspace.DefaultSandbox, ".", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	ws.KeepReadOnly(ReadOnlyPaths(host, []string{filepath.Join(host, "skills")}, nil, nil)...)
	return ws
}

func skill(perms map[string]any) *skills.Skill {
	fm := map[string]any{"name": "s"}
	if perms != nil {
		fm["metadata"] = map[string]any{"harness": map[string]any{"permissions": perms}}
	}
	return &skills.Skill{Name: "s", Frontmatter: fm}
}

func TestFor(t *testing.T) {
	env := map[string]string{"TOKEN": "t", "OTHER": "o"}
	lookup := func(n string) (string, bool) { v, ok := env[n]; return v, ok }
	for _, c := range []struct {
		name    string
		perms   map[string]any
		backend scripts.Backend
		code    string
		read    []string
		write   []string
		env     []string
		limited bool
	}{
		{name: "undeclared", backend: scripts.BackendBwrap, write: []string{"."}},
		{name: "undeclared on the host", backend: scripts.BackendNone, write: []string{"."}},
		{name: "declared on the host", perms: map[string]any{"filesystem": map[string]any{"read": []any{"docs"}}}, backend: scripts.BackendNone, code: "capability_unenforceable"},
		{name: "read and write", perms: map[string]any{"filesystem": map[string]any{"read": []any{"docs", "out"}, "write": []any{"out"}}}, backend: scripts.BackendBwrap,
			read: []string{"docs"}, write: []string{"out"}, limited: true},
		{name: "env passed and withheld", perms: map[string]any{"env": []any{"TOKEN", "OTHER", "UNSET"}}, backend: scripts.BackendLandlock,
			read: []string{}, write: []string{}, env: []string{"TOKEN"}, limited: true},
		{name: "write into .git", perms: map[string]any{"filesystem": map[string]any{"write": []any{".git/hooks"}}}, backend: scripts.BackendBwrap, code: "protected_path"},
		{name: "bad manifest", perms: map[string]any{"filesystem": map[string]any{"write": []any{"/etc"}}}, backend: scripts.BackendBwrap, code: "skill_permissions_invalid"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.limited && scripts.LandlockABI() == 0 {
				c.code = "capability_unenforceable"
			}
			g, err := For(Request{Skill: skill(c.perms), Workspace: fixture(t), Backend: c.backend, PassEnv: []string{"TOKEN", "UNSET"}, Lookup: lookup})
			var ref *Refusal
			if c.code != "" {
				if !errors.As(err, &ref) || ref.Code != c.code {
					t.Fatalf("got %v, want %s", err, c.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.read != nil && !slices.Equal(g.Record.Read, c.read) || !slices.Equal(g.Record.Write, c.write) {
				t.Errorf("read %v write %v, want %v %v", g.Record.Read, g.Record.Write, c.read, c.write)
			}
			if c.env != nil && !slices.Equal(g.Record.Env, c.env) {
				t.Errorf("env %v, want %v", g.Record.Env, c.env)
			}
			if g.LimitExec != c.limited || g.Record.ExecLimited != c.limited {
				t.Errorf("exec limited %v, want %v", g.LimitExec, c.limited)
			}
			if g.Record.EnforcedBy["filesystem"] == "" || g.Record.EnforcedBy["exec"] == "" {
				t.Errorf("enforcement not named: %v", g.Record.EnforcedBy)
			}
			if c.perms == nil && !slices.Contains(g.Mount.ReadOnly, ".git") {
				t.Errorf("an undeclared skill's view does not keep .git read-only: %v", g.Mount.ReadOnly)
			}
		})
	}
}

// TestReadOnlyPathsOfAWorktree: a worktree's .git file leads to its
// gitdir and the main repository's directory, both kept read-only.
func TestReadOnlyPathsOfAWorktree(t *testing.T) {
	main, _ := filepath.EvalSymlinks(t.TempDir())
	wt, _ := filepath.EvalSymlinks(t.TempDir())
	gitdir := filepath.Join(main, ".git", "worktrees", "wt")
	os.MkdirAll(gitdir, 0o755)
	os.WriteFile(filepath.Join(gitdir, "commondir"), []byte("../..\n"), 0o644)
	os.WriteFile(filepath.Join(wt, ".git"), []byte("gitdir: "+gitdir+"\n"), 0o644)
	got := ReadOnlyPaths(wt, []string{wt, filepath.Join(wt, "skills")}, []string{filepath.Join(wt, "vendor")}, []string{filepath.Join(wt, "vendor")})
	want := []string{filepath.Join(wt, ".git"), gitdir, filepath.Join(main, ".git"), filepath.Join(wt, ".harness"), filepath.Join(wt, "skills")}
	if !slices.Equal(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
}

// TestSweep: a read-only path that did not exist when a call started and
// exists after it is removed and reported.
func TestSweep(t *testing.T) {
	ws := fixture(t)
	os.RemoveAll(filepath.Join(ws.Host, ".git"))
	g, err := For(Request{Skill: skill(nil), Workspace: ws, Backend: scripts.BackendBwrap})
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(ws.Host, ".git", "hooks"), 0o755)
	if made := Strings(g.Sweep()); !slices.Equal(made, []string{".git"}) {
		t.Errorf("swept %v", made)
	}
	if _, err := os.Lstat(filepath.Join(ws.Host, ".git")); err == nil {
		t.Error(".git is still there")
	}
}

// TestSweepMissingThroughLink: a read-only path missing when the call
// started, reached after it only through a link the call left on the way,
// is reported and nothing is removed where the link leads (outside the
// workspace here).
func TestSweepMissingThroughLink(t *testing.T) {
	ws := fixture(t)
	outside := t.TempDir()
	os.MkdirAll(filepath.Join(outside, "b"), 0o755)
	ws.KeepReadOnly(filepath.Join(ws.Host, "a", "b"))
	g, err := For(Request{Skill: skill(nil), Workspace: ws, Backend: scripts.BackendBwrap})
	if err != nil {
		t.Fatal(err)
	}
	os.Symlink(outside, filepath.Join(ws.Host, "a"))
	made := g.Sweep()
	if got := Strings(made); !slices.Equal(got, []string{"a/b (made, and reached through a link on the way: neither followed nor removed)"}) || !made[0].Left {
		t.Errorf("swept %q", got)
	}
	if _, err := os.Stat(filepath.Join(outside, "b")); err != nil {
		t.Errorf("the sweep removed what the link leads to: %v", err)
	}
}
