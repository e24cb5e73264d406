package scripts

import (
	"context"
	"debug/elf"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/testenv"
)

// limitedRun runs a script under runtime (argv before the script path)
// with the execute limit and the programs in allowed, in a writable
// workspace that holds payload: a copy of /usr/bin/env the test put
// there, as a script could have written it itself.
func limitedRun(t *testing.T, b Backend, argv []string, name, script string, allowed []string) *Result {
	t.Helper()
	_, err := Probe(context.Background(), b, helper(t))
	testenv.Need(t, "sandbox backend "+string(b), err)
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	os.Chmod(ws, 0o777)
	if err := copyFile("/usr/bin/env", filepath.Join(ws, "payload"), 0o755); err != nil {
		t.Fatal(err)
	}
	skill, _ := filepath.EvalSymlinks(t.TempDir())
	os.WriteFile(filepath.Join(skill, name), []byte(script), 0o444)
	// A program the skill ships among its files, read-only to it.
	if err := copyFile("/usr/bin/env", filepath.Join(skill, "tool"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(skill, 0o755)
	os.Chmod(filepath.Dir(skill), 0o755)
	cwd, skillPath := "/workspace", "/skill"
	if b != BackendBwrap {
		cwd, skillPath = ws, skill
	}
	spec := Spec{
		Argv: append(append([]string{}, argv...), skillPath+"/"+name),
		Env:  []string{"PATH=/usr/bin:/bin", "HOME=/tmp", "LANG=C.UTF-8", "LOADER=" + elfInterpreter("/usr/bin/id"), "SKILL=" + skillPath},
		Path: os.Getenv("PATH"), Cwd: cwd,
		Mounts: []Mount{{Host: ws, Sandbox: "/workspace", Writable: true}, {Host: skill, Sandbox: "/skill"}},
		Helper: helper(t), Timeout: 60 * time.Second, LimitExec: true, Exec: allowed,
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

// TestExecLimitHoldsAgainstLoader: a script limited to its runtime cannot
// run another program by handing it to the dynamic loader, which maps any
// ELF it can open (mmap is not execve): the programs it was not given are
// not in its view, and under bwrap a copy it wrote lies on a noexec mount.
func TestExecLimitHoldsAgainstLoader(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			res := limitedRun(t, b, []string{"bash"}, "run.sh", `
"$LOADER" /bin/ls / >/dev/null 2>&1 && echo LOADER-RAN-LS
"$LOADER" /usr/bin/id >/dev/null 2>&1 && echo LOADER-RAN-ID
"$LOADER" ./payload >/dev/null 2>&1 && echo LOADER-RAN-WORKSPACE-COPY
"$LOADER" "$SKILL/tool" >/dev/null 2>&1 && echo LOADER-RAN-SKILL-COPY
"$SKILL/tool" >/dev/null 2>&1 && echo EXECVE-SKILL-COPY
"$LOADER" /run/harness/helper -test.run='^$' >/dev/null 2>&1 && echo LOADER-RAN-HELPER
{ read -r -n 1 _ < /usr/bin/ls; } 2>/dev/null && echo READ-LS
echo builtin-ok
echo done`, nil)
			bad := []string{"LOADER-RAN-LS", "LOADER-RAN-ID", "READ-LS", "EXECVE-SKILL-COPY"}
			if b == BackendBwrap {
				// Landlock cannot refuse mmap PROT_EXEC of a file the
				// script can read outside the system directories
				// (docs/permissions.md says so).
				bad = append(bad, "LOADER-RAN-WORKSPACE-COPY", "LOADER-RAN-SKILL-COPY", "LOADER-RAN-HELPER")
			}
			expectLines(t, res, []string{"builtin-ok"}, bad)
		})
	}
}

// anonymousExec tries every way the script knows to run a binary that has
// no path the execute limit governs: an executable memfd run through
// /proc/self/fd and through execveat(AT_EMPTY_PATH), and a copy in /tmp
// run through execveat and through the loader.
const anonymousExec = `
import os, subprocess
payload = open("payload", "rb").read()
loader = os.environ["LOADER"]
devnull = os.open("/dev/null", os.O_WRONLY)

def child(tag, run):
    pid = os.fork()
    if pid == 0:
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        try:
            run()
        finally:
            os._exit(111)
    _, st = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(st) == 0:
        print(tag, flush=True)

for tag, flags in (("DEFAULT", 0), ("MFDEXEC", 0x10), ("SEALED", 0x8)):
    try:
        fd = os.memfd_create("x", flags)
    except OSError:
        continue
    os.write(fd, payload)
    child("MEMFD-PROC-" + tag, lambda: os.execv("/proc/self/fd/%d" % fd, ["id"]))
    child("MEMFD-AT-" + tag, lambda: os.execve(fd, ["id"], {}))

copy = os.path.join(os.environ.get("TMPDIR", "/tmp"), "myid")
with open(copy, "wb") as f:
    f.write(payload)
os.chmod(copy, 0o755)
fd = os.open(copy, os.O_RDONLY)
child("TMP-AT", lambda: os.execve(fd, ["id"], {}))
child("TMP-EXECVE", lambda: os.execv(copy, ["id"]))
if subprocess.run([loader, copy], capture_output=True).returncode == 0:
    print("TMP-LOADER")
print("python-ok")
print("done")
`

// TestExecLimitHoldsAgainstAnonymousFiles: no executable anonymous file
// (memfd) can be made, execveat on a descriptor is refused, and under
// bwrap the loader cannot map a copy in /tmp.
func TestExecLimitHoldsAgainstAnonymousFiles(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			res := limitedRun(t, b, []string{"python3"}, "run.py", anonymousExec, nil)
			bad := []string{
				"MEMFD-PROC-DEFAULT", "MEMFD-PROC-MFDEXEC", "MEMFD-PROC-SEALED",
				"MEMFD-AT-DEFAULT", "MEMFD-AT-MFDEXEC", "MEMFD-AT-SEALED",
				"TMP-AT", "TMP-EXECVE",
			}
			if b == BackendBwrap {
				bad = append(bad, "TMP-LOADER")
			}
			expectLines(t, res, []string{"python-ok"}, bad)
		})
	}
}

// TestExecLimitKeepsRuntimes: the narrowed view still holds what each
// runtime needs (python3's standard library and its compiled modules,
// node's shared libraries, deno as a single binary) and what a declared
// program needs (git).
func TestExecLimitKeepsRuntimes(t *testing.T) {
	type runtimeCase struct {
		name    string
		argv    []string
		file    string
		script  string
		allowed []string
		want    string
	}
	cases := []runtimeCase{
		{"bash", []string{"bash"}, "run.sh", `read -r user _ < /etc/passwd; printf 'BASH-%s\n' OK; echo done`, nil, "BASH-OK"},
		{"python3", []string{"python3"}, "run.py", `
import ssl, json, sqlite3, hashlib, ctypes, decimal, zlib, bz2, lzma, subprocess, locale
print("PY-" + "OK", hashlib.sha256(b"x").hexdigest()[:4], sqlite3.connect(":memory:").execute("select 1").fetchone()[0])
print("done")`, nil, "PY-OK"},
		{"git", []string{"bash"}, "run.sh", `git --version >/dev/null && git init -q repo && git -C repo status --short && echo GIT-OK; echo done`, []string{"git"}, "GIT-OK"},
	}
	if _, err := exec.LookPath("deno"); err == nil || os.Getenv("HARNESS_REQUIRE_TOOLS") == "1" {
		cases = append(cases, runtimeCase{"deno", []string{"deno", "run", "--no-prompt"}, "run.ts", `console.log("DENO-" + "OK"); console.log("done")`, nil, "DENO-OK"})
	}
	if _, err := exec.LookPath("node"); err == nil {
		cases = append(cases, runtimeCase{"node", []string{"node"}, "run.js", `require("crypto").createHash("sha256"); console.log("NODE-" + "OK"); console.log("done")`, nil, "NODE-OK"})
	}
	for _, b := range backends {
		for _, c := range cases {
			t.Run(string(b)+"/"+c.name, func(t *testing.T) {
				res := limitedRun(t, b, c.argv, c.file, c.script, c.allowed)
				expectLines(t, res, []string{c.want}, nil)
			})
		}
	}
}

// TestExecView: the view holds each program the script may run with what
// the loader maps for it, and no other program.
func TestExecView(t *testing.T) {
	real := func(p string) string {
		r, err := filepath.EvalSymlinks(p)
		if err != nil {
			t.Skipf("%s: %v", p, err)
		}
		return r
	}
	bash, libc, ls, git := real("/usr/bin/bash"), real("/lib/x86_64-linux-gnu/libc.so.6"), real("/usr/bin/ls"), real("/usr/bin/git")
	loader := elfInterpreter(bash)
	progs := t.TempDir()
	if err := copyFile("/usr/bin/id", filepath.Join(progs, "tool"), 0o755); err != nil {
		t.Fatal(err)
	}
	shown := func(v *execView, p string) bool {
		for _, d := range v.dirs {
			if p == d || strings.HasPrefix(p, d+"/") {
				return true
			}
		}
		return slices.Contains(v.files, p)
	}
	for _, c := range []struct {
		name             string
		allowed          []string
		exec, show, hide []string
	}{
		{"runtime alone", nil, []string{bash, loader}, []string{bash, libc, real(loader)}, []string{ls, git}},
		{"a program by name", []string{"git", "no-such-program"}, []string{bash, git}, []string{git, libc}, []string{ls}},
		{"a program by path", []string{"/usr/bin/git"}, []string{bash, "/usr/bin/git"}, []string{git}, []string{ls}},
		{"a directory of programs", []string{progs}, []string{bash, progs}, []string{filepath.Join(progs, "tool"), libc}, []string{ls, git}},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := viewFor(bash, c.allowed, "/usr/bin:/bin", "")
			for _, e := range c.exec {
				if !slices.Contains(v.exec, e) {
					t.Errorf("%s may not be executed: %v", e, v.exec)
				}
			}
			for _, p := range c.show {
				if !shown(v, p) {
					t.Errorf("%s is not shown: files %v dirs %v", p, v.files, v.dirs)
				}
			}
			for _, p := range c.hide {
				if shown(v, p) || slices.Contains(v.exec, p) {
					t.Errorf("%s is shown", p)
				}
			}
			for _, l := range v.links {
				if slices.Contains(topLinks, l.path) {
					t.Errorf("top-level link %s made again", l.path)
				}
			}
		})
	}
}

func TestUnescapeMountinfo(t *testing.T) {
	for in, want := range map[string]string{
		"/workspace":           "/workspace",
		`/work\040space`:       "/work space",
		`/a\134b`:              `/a\b`,
		`/trailing\04`:         `/trailing\04`,
		`/not\999octal\011tab`: "/not\\999octal\ttab",
	} {
		if got := unescapeMountinfo(in); got != want {
			t.Errorf("unescapeMountinfo(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzParseLdCache: a cache file of any shape gives absolute paths or an
// error, never a panic.
func FuzzParseLdCache(f *testing.F) {
	f.Add([]byte("glibc-ld.so.cache1.1"))
	hdr := append([]byte("glibc-ld.so.cache1.1"), make([]byte, 28)...)
	hdr[20] = 1
	f.Add(append(hdr, make([]byte, 24)...))
	if raw, err := os.ReadFile("/etc/ld.so.cache"); err == nil && len(raw) < 1<<20 {
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, err := parseLdCache(raw)
		if err != nil {
			return
		}
		for name, paths := range m {
			for _, p := range paths {
				if !filepath.IsAbs(p) {
					t.Fatalf("%s: relative path %q", name, p)
				}
			}
		}
	})
}

// elfInterpreter is the loader named in p's PT_INTERP ("" if none).
func elfInterpreter(p string) string {
	f, err := elf.Open(p)
	if err != nil {
		return ""
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			raw, _ := io.ReadAll(io.LimitReader(prog.Open(), 4096))
			return strings.TrimRight(string(raw), "\x00")
		}
	}
	return ""
}

// TestExecViewFollowsChanges: a cached view is computed again when a
// program it started from is replaced.
func TestExecViewFollowsChanges(t *testing.T) {
	selinux, err := filepath.EvalSymlinks("/lib/x86_64-linux-gnu/libselinux.so.1")
	if err != nil {
		t.Skipf("libselinux: %v", err)
	}
	dir := t.TempDir()
	tool := filepath.Join(dir, "tool")
	if err := copyFile("/usr/bin/env", tool, 0o755); err != nil {
		t.Fatal(err)
	}
	if v := viewFor("/usr/bin/bash", []string{tool}, "", ""); slices.Contains(v.files, selinux) {
		t.Fatalf("env needs no libselinux, yet the view shows it")
	}
	os.Remove(tool)
	if err := copyFile("/usr/bin/id", tool, 0o755); err != nil {
		t.Fatal(err)
	}
	if v := viewFor("/usr/bin/bash", []string{tool}, "", ""); !slices.Contains(v.files, selinux) {
		t.Errorf("the replaced program's library %s is not shown: %v", selinux, v.files)
	}
}

// TestExecTempRuns: with ExecTemp, a program the script writes in its
// private temporary directory runs (a toolchain's test binary), directly
// and through the loader; elsewhere in the workspace it still does not.
func TestExecTempRuns(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			_, err := Probe(context.Background(), b, helper(t))
			testenv.Need(t, "sandbox backend "+string(b), err)
			ws, _ := filepath.EvalSymlinks(t.TempDir())
			os.Chmod(ws, 0o777)
			if err := copyFile("/usr/bin/env", filepath.Join(ws, "payload"), 0o755); err != nil {
				t.Fatal(err)
			}
			skill, _ := filepath.EvalSymlinks(t.TempDir())
			os.WriteFile(filepath.Join(skill, "run.py"), []byte(`
import os, shutil, subprocess
tmp = os.environ.get("TMPDIR", "/tmp")
shutil.copy("payload", os.path.join(tmp, "built"))
os.chmod(os.path.join(tmp, "built"), 0o755)
if subprocess.run([os.path.join(tmp, "built")], capture_output=True).returncode == 0:
    print("RAN-TEMP")
if subprocess.run([os.environ["LOADER"], os.path.join(tmp, "built")], capture_output=True).returncode == 0:
    print("LOADED-TEMP")
try:
    if subprocess.run(["./payload"], capture_output=True).returncode == 0:
        print("RAN-WORKSPACE")
except OSError:
    pass
print("done")
`), 0o444)
			os.Chmod(skill, 0o755)
			os.Chmod(filepath.Dir(skill), 0o755)
			cwd, skillPath := "/workspace", "/skill"
			if b != BackendBwrap {
				cwd, skillPath = ws, skill
			}
			res, err := Run(context.Background(), b, Spec{
				Argv: []string{"python3", skillPath + "/run.py"},
				Env:  []string{"PATH=/usr/bin:/bin", "HOME=/tmp", "LOADER=" + elfInterpreter("/usr/bin/env")},
				Path: os.Getenv("PATH"), Cwd: cwd,
				Mounts: []Mount{{Host: ws, Sandbox: "/workspace", Writable: true}, {Host: skill, Sandbox: "/skill"}},
				Helper: helper(t), Timeout: 60 * time.Second, LimitExec: true, ExecTemp: true,
			})
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			expectLines(t, res, []string{"RAN-TEMP", "LOADED-TEMP", "done"}, []string{"RAN-WORKSPACE"})
		})
	}
}
