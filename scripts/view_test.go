package scripts

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/testenv"
)

// viewWorkspace is a workspace with a declared and an undeclared part and
// a git directory whose hooks git would run on the host.
func viewWorkspace(t *testing.T) string {
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	for _, d := range []string{"docs", "out", "secret", "sub", ".git/hooks", ".harness/runs"} {
		os.MkdirAll(filepath.Join(ws, d), 0o755)
	}
	os.WriteFile(filepath.Join(ws, "docs", "readme"), []byte("declared"), 0o644)
	os.WriteFile(filepath.Join(ws, "secret", "key"), []byte("undeclared"), 0o644)
	os.WriteFile(filepath.Join(ws, ".git", "config"), []byte("[core]\n"), 0o644)
	os.WriteFile(filepath.Join(ws, ".harness", "runs", "record"), []byte("run"), 0o644)
	os.Symlink("../secret/key", filepath.Join(ws, "docs", "link"))
	os.Chmod(ws, 0o755)
	return ws
}

// inView runs a bash snippet with the workspace mounted as m says;
// paths in the script are relative to the workspace.
func inView(t *testing.T, b Backend, ws string, m Mount, script string, adjust func(*Spec)) *Result {
	t.Helper()
	_, err := Probe(context.Background(), b, helper(t))
	testenv.Need(t, "sandbox backend "+string(b), err)
	skill, _ := filepath.EvalSymlinks(t.TempDir())
	os.WriteFile(filepath.Join(skill, "run.sh"), []byte(script), 0o444)
	os.Chmod(skill, 0o755)
	os.Chmod(filepath.Dir(skill), 0o755)
	m.Host, m.Sandbox = ws, "/workspace"
	cwd, skillPath := "/workspace", "/skill"
	if b != BackendBwrap {
		cwd, skillPath = ws, skill
	}
	spec := Spec{
		Argv: []string{"bash", skillPath + "/run.sh"}, Env: []string{"PATH=/usr/bin:/bin", "HOME=/tmp", "LANG=C.UTF-8"},
		Path: os.Getenv("PATH"), Cwd: cwd,
		Mounts: []Mount{m, {Host: skill, Sandbox: "/skill"}},
		Hide:   []string{"/workspace/.harness"}, HideHost: []string{filepath.Join(ws, ".harness")},
		Helper: helper(t), Timeout: 30 * time.Second,
	}
	if adjust != nil {
		adjust(&spec)
	}
	res, err := Run(context.Background(), b, spec)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if !strings.Contains(string(res.Stdout), "done") {
		t.Fatalf("the script did not finish: exit %d\nstdout:\n%s\nstderr:\n%s", res.ExitCode, res.Stdout, res.Stderr)
	}
	return res
}

func expectLines(t *testing.T, res *Result, want, bad []string) {
	t.Helper()
	out := string(res.Stdout)
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("missing %s\n%s\nstderr:\n%s", w, out, res.Stderr)
		}
	}
	for _, b := range bad {
		if strings.Contains(out, b) {
			t.Errorf("%s\n%s", b, out)
		}
	}
}

// TestNarrowedView: a mount narrowed to declared parts shows those parts
// only, read-only or writable as declared; the rest of the workspace
// cannot be read, listed or written, not even through a link inside a
// declared part, and a read-only path stays read-only inside a writable
// part.
func TestNarrowedView(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			ws := viewWorkspace(t)
			m := Mount{Only: []Part{{Rel: "docs"}, {Rel: "out", Writable: true}}, ReadOnly: []string{".git"}}
			res := inView(t, b, ws, m, `
cat docs/readme >/dev/null 2>&1 && echo READ-DECLARED
echo x > out/made 2>/dev/null && echo WROTE-DECLARED
cat secret/key 2>/dev/null && echo READ-UNDECLARED
cat docs/link 2>/dev/null && echo READ-THROUGH-LINK
ls -a . 2>/dev/null | grep -q secret && echo LISTED-UNDECLARED
echo x > docs/new 2>/dev/null && echo WROTE-READ-ONLY-PART
echo x > new-top 2>/dev/null && echo WROTE-UNDECLARED
cat .git/config 2>/dev/null && echo READ-GIT
echo done`, nil)
			expectLines(t, res, []string{"READ-DECLARED", "WROTE-DECLARED"},
				[]string{"READ-UNDECLARED", "READ-THROUGH-LINK", "LISTED-UNDECLARED", "WROTE-READ-ONLY-PART", "WROTE-UNDECLARED", "READ-GIT"})
			if b, err := os.ReadFile(filepath.Join(ws, "out", "made")); err != nil || string(b) != "x\n" {
				t.Errorf("the declared write did not reach the workspace: %q %v", b, err)
			}
			for _, p := range []string{"docs/new", "new-top"} {
				if _, err := os.Lstat(filepath.Join(ws, p)); err == nil {
					t.Errorf("%s was created", p)
				}
			}
		})
	}
}

// TestReadOnlyInsideWritable: with the whole workspace writable (an
// undeclared skill, or write: ["."]), git's directory stays read-only:
// no hook, no config change.
func TestReadOnlyInsideWritable(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			ws := viewWorkspace(t)
			for _, m := range []Mount{
				{Writable: true, ReadOnly: []string{".git"}},
				{Only: []Part{{Rel: ".", Writable: true}}, ReadOnly: []string{".git"}},
			} {
				res := inView(t, b, ws, m, `
printf '#!/bin/sh\necho pwned\n' > .git/hooks/post-commit 2>/dev/null && echo WROTE-HOOK
echo '[core] fsmonitor = evil' >> .git/config 2>/dev/null && echo CHANGED-CONFIG
rm -f .git/config 2>/dev/null; [ -e .git/config ] || echo REMOVED-CONFIG
mv .git .git-old 2>/dev/null && echo MOVED-GIT
cat .git/config >/dev/null && echo READ-GIT
echo x > sub/file && echo WROTE-WORKSPACE
cat .harness/runs/record 2>/dev/null && echo READ-RUNS
echo done`, nil)
				expectLines(t, res, []string{"READ-GIT", "WROTE-WORKSPACE"}, []string{"WROTE-HOOK", "CHANGED-CONFIG", "REMOVED-CONFIG", "MOVED-GIT", "READ-RUNS"})
				if _, err := os.Lstat(filepath.Join(ws, ".git", "hooks", "post-commit")); err == nil {
					t.Error("a hook was written")
				}
			}
		})
	}
}

// TestExecLimited: with the execute limit, the script runs under its
// runtime but cannot start another binary unless it is named.
func TestExecLimited(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			ws := viewWorkspace(t)
			script := `
/usr/bin/id -u >/dev/null 2>&1 && echo RAN-ID
cp /usr/bin/id /tmp/myid 2>/dev/null && /tmp/myid >/dev/null 2>&1 && echo RAN-COPY
echo builtin-ok
echo done`
			res := inView(t, b, ws, Mount{Writable: true}, script, func(s *Spec) { s.LimitExec = true })
			expectLines(t, res, []string{"builtin-ok"}, []string{"RAN-ID", "RAN-COPY"})
			res = inView(t, b, ws, Mount{Writable: true}, script, func(s *Spec) { s.LimitExec, s.Exec = true, []string{"id"} })
			expectLines(t, res, []string{"RAN-ID"}, []string{"RAN-COPY"})
		})
	}
}

// TestNarrowedViewRefusesLinks: a declared part that is a link, or lies
// behind one, is refused before anything runs, whatever it leads to.
func TestNarrowedViewRefusesLinks(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			_, err := Probe(context.Background(), b, helper(t))
			testenv.Need(t, "sandbox backend "+string(b), err)
			ws := viewWorkspace(t)
			os.Symlink("secret", filepath.Join(ws, "docs-link"))
			os.Symlink("/etc", filepath.Join(ws, "etc-link"))
			for _, rel := range []string{"docs-link", "etc-link", "docs-link/key", "docs/link"} {
				cwd := "/workspace"
				if b != BackendBwrap {
					cwd = ws
				}
				_, err := Run(context.Background(), b, Spec{
					Argv: []string{"bash", "-c", "echo ran"}, Env: []string{"PATH=/usr/bin:/bin"}, Path: os.Getenv("PATH"), Cwd: cwd,
					Mounts: []Mount{{Host: ws, Sandbox: "/workspace", Only: []Part{{Rel: rel}}}}, Helper: helper(t), Timeout: 10 * time.Second,
				})
				var ref *Refusal
				if !errors.As(err, &ref) || ref.Code != "view_path_invalid" {
					t.Errorf("part %s: %v, want view_path_invalid", rel, err)
				}
			}
		})
	}
}
