package grant

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/testenv"
	"github.com/harness-dev/harness/scripts"
	"github.com/harness-dev/harness/workspace"
)

// TestMain lets the test binary act as the Landlock helper, as the
// harness binary does.
func TestMain(m *testing.M) {
	if code, ok := scripts.HelperDispatch(os.Args); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// plantScript tries every way into git's hands from inside the sandbox:
// a submodule's .git file pointed at a repository the script makes, a
// nested repository's config and hooks, .gitmodules, a new .git, and
// (where the sandbox lets a directory move) the submodule moved down a
// level under a .git made for it.
const plantScript = `
repo() {
	mkdir -p "$1/objects" "$1/refs"
	echo 'ref: refs/heads/main' > "$1/HEAD"
	printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = touch "$HARNESS_MARKER"; false\n' > "$1/config"
}
repo work/evil
printf 'gitdir: ../work/evil\n' > sub/.git 2>/dev/null && echo WROTE-GITFILE
printf '' > .gitmodules 2>/dev/null && echo WROTE-GITMODULES
printf '[core]\n\tfsmonitor = touch "$HARNESS_MARKER"; false\n' >> nested/.git/config 2>/dev/null && echo WROTE-NESTED-CONFIG
printf '#!/bin/sh\ntouch "$HARNESS_MARKER"\n' > nested/.git/hooks/pre-commit 2>/dev/null && echo WROTE-NESTED-HOOK
mkdir -p work/fresh && repo work/fresh/.git && echo MADE-GIT
mkdir -p work/deep 2>/dev/null && mv sub work/deep/sub 2>/dev/null && repo work/deep/.git/modules/sub && echo MOVED-SUB
echo done`

// gitWorkspace is a repository with a submodule (sub), a nested
// repository (nested) and a directory to work in, made by git.
func gitWorkspace(t *testing.T) string {
	testenv.NeedGit(t)
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	os.Chmod(dir, 0o755)
	src, ws := filepath.Join(dir, "subsrc"), filepath.Join(dir, "ws")
	testenv.Git(t, dir, "init", "-q", "-b", "main", src)
	os.WriteFile(filepath.Join(src, "a"), []byte("a\n"), 0o644)
	testenv.Git(t, src, "add", "-A")
	testenv.Git(t, src, "commit", "-q", "-m", "one")
	testenv.Git(t, dir, "init", "-q", "-b", "main", ws)
	os.MkdirAll(filepath.Join(ws, "work"), 0o755)
	os.WriteFile(filepath.Join(ws, "work", "keep"), []byte("keep\n"), 0o644)
	testenv.Git(t, ws, "add", "-A")
	testenv.Git(t, ws, "commit", "-q", "-m", "one")
	testenv.Git(t, ws, "-c", "protocol.file.allow=always", "submodule", "add", "-q", "../subsrc", "sub")
	testenv.Git(t, ws, "commit", "-q", "-m", "sub")
	testenv.Git(t, ws, "init", "-q", "-b", "main", "nested")
	return ws
}

// TestGitAttackSandboxed: a script under bwrap or Landlock, granted the
// whole workspace as a skill without a manifest is, cannot get git on the
// host to run what it planted: git run afterwards where a person would
// run it starts nothing.
func TestGitAttackSandboxed(t *testing.T) {
	exe, _ := os.Executable()
	for _, b := range []scripts.Backend{scripts.BackendBwrap, scripts.BackendLandlock} {
		t.Run(string(b), func(t *testing.T) {
			_, err := scripts.Probe(context.Background(), b, exe)
			testenv.Need(t, "sandbox backend "+string(b), err)
			host := gitWorkspace(t)
			idx, err := ScanGit(context.Background(), host, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			ws, err := workspace.Open(host, workspace.DefaultSandbox, ".", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ws.Close()
			ws.KeepReadOnly(ReadOnlyPaths(host, nil, idx.ControlPaths(), nil)...)
			g, err := For(Request{Skill: skill(nil), Workspace: ws, Backend: b, Git: idx})
			if err != nil {
				t.Fatal(err)
			}
			cwd := ws.Sandbox
			if b != scripts.BackendBwrap {
				cwd = host
			}
			marker := filepath.Join(filepath.Dir(host), "fsmonitor-ran")
			res, err := scripts.Run(context.Background(), b, scripts.Spec{
				Argv: []string{"bash", "-c", plantScript}, Env: []string{"PATH=/usr/bin:/bin", "HOME=/tmp", "LANG=C.UTF-8"},
				Path: os.Getenv("PATH"), Cwd: cwd, Mounts: []scripts.Mount{g.Mount}, Helper: exe, Timeout: 30 * time.Second,
			})
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			made := Strings(g.Sweep())
			out := string(res.Stdout)
			for _, bad := range []string{"WROTE-GITFILE", "WROTE-GITMODULES", "WROTE-NESTED-CONFIG", "WROTE-NESTED-HOOK"} {
				if strings.Contains(out, bad) {
					t.Errorf("the script could: %s", bad)
				}
			}
			if !strings.Contains(out, "done") {
				t.Fatalf("the script did not finish: %s %s", out, res.Stderr)
			}
			if !slices.Contains(made, "work/fresh/.git") {
				t.Errorf("swept %q, want work/fresh/.git among them", made)
			}
			if strings.Contains(out, "MOVED-SUB") && !slices.ContainsFunc(made, func(s string) bool { return strings.Contains(s, "moved back") }) {
				t.Errorf("the submodule moved and was not moved back: %q", made)
			}
			for _, dir := range []string{".", "sub", "nested", "work/fresh", "work/deep/sub"} {
				cmd := exec.Command("git", "status")
				cmd.Dir = filepath.Join(host, dir)
				cmd.Env = append(os.Environ(), "HOME="+filepath.Dir(host), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HARNESS_MARKER="+marker)
				cmd.Run()
			}
			if _, err := os.Lstat(marker); err == nil {
				t.Fatalf("git on the host ran the command the script planted (swept %q; script said %s)", made, out)
			}
		})
	}
}

// TestGitAttackAsOrdinaryUser runs TestGitAttackSandboxed as a user who
// is not root (uid 4242): no idmapped mount, no drop to another user, the
// sweep removing what the same user made.
func TestGitAttackAsOrdinaryUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("already an ordinary user: TestGitAttackSandboxed ran as one")
	}
	_, err := exec.LookPath("setpriv")
	testenv.Need(t, "setpriv (util-linux)", err)
	dir, err := os.MkdirTemp("", "harness-grant-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	self, _ := os.Executable()
	bin := filepath.Join(dir, "grant.test")
	if err := copyExecutable(self, bin); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("setpriv", "--reuid=4242", "--regid=4242", "--clear-groups", "--", bin, "-test.run", "^TestGitAttackSandboxed$", "-test.count", "1", "-test.v")
	cmd.Env = append(os.Environ(), "HOME=/tmp", "TMPDIR=/tmp")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestGitAttackSandboxed ") {
		t.Fatalf("as uid 4242: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "SKIP") {
		t.Errorf("parts were skipped as uid 4242:\n%s", out)
	}
}

func copyExecutable(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
