package scripts

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/testenv"
)

// TestMain lets the test binary act as the Landlock helper, as the
// harness binary does.
func TestMain(m *testing.M) {
	if code, ok := HelperDispatch(os.Args); ok {
		os.Exit(code)
	}
	if os.Getenv("HARNESS_TEST_POD_CHILD") != "" {
		os.Exit(podChild())
	}
	os.Exit(m.Run())
}

// backends are the sandboxes hostile scripts must not escape; each test
// runs on every one that starts here and skips only the others.
var backends = []Backend{BackendBwrap, BackendLandlock}

func helper(t testing.TB) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// sandboxed runs a bash snippet with a writable workspace ($WS) and a
// read-only skill directory ($SKILL_DIR); it skips when the backend
// cannot start here.
func sandboxed(t *testing.T, backend Backend, script string, lim Limits, timeout time.Duration) (*Result, string) {
	t.Helper()
	return sandboxedWith(t, backend, script, lim, timeout, nil)
}

// sandboxedWith is sandboxed with a hook that prepares the workspace.
func sandboxedWith(t *testing.T, backend Backend, script string, lim Limits, timeout time.Duration, prepare func(ws string)) (*Result, string) {
	t.Helper()
	return sandboxedSpec(t, backend, script, lim, timeout, prepare, nil)
}

// sandboxedSpec is sandboxedWith with a hook that changes the Spec.
func sandboxedSpec(t *testing.T, backend Backend, script string, lim Limits, timeout time.Duration, prepare func(ws string), edit func(*Spec)) (*Result, string) {
	t.Helper()
	_, err := Probe(context.Background(), backend, helper(t))
	testenv.Need(t, "sandbox backend "+string(backend), err)
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	skill, _ := filepath.EvalSymlinks(t.TempDir())
	os.WriteFile(filepath.Join(skill, "run.sh"), []byte(script), 0o444)
	// As harness stages skills: readable by the unprivileged user scripts
	// run as when the tests run as root.
	os.Chmod(skill, 0o755)
	os.Chmod(filepath.Dir(skill), 0o755)
	os.MkdirAll(filepath.Join(ws, ".harness", "runs"), 0o755)
	os.WriteFile(filepath.Join(ws, ".harness", "runs", "secret"), []byte("run record"), 0o644)
	// Under Landlock, with the run directory inside the workspace, only
	// existing top-level directories are writable (a rule grants a whole
	// tree, so the workspace root itself cannot be granted): work in one.
	os.MkdirAll(filepath.Join(ws, "sub"), 0o755)
	if prepare != nil {
		prepare(ws)
	}
	wsPath, skillPath, wsEnv := "/workspace", "/workspace/skills/s", "/workspace"
	if backend != BackendBwrap {
		// Without a mount namespace the script sees host paths; when the
		// tests run as root the workspace is an idmapped mount at a
		// private path, which the script reaches as its working directory.
		wsPath, skillPath, wsEnv = ws, skill, "."
	}
	spec := Spec{
		Argv:     []string{"bash", skillPath + "/run.sh"},
		Env:      []string{"PATH=/usr/bin:/bin", "HOME=/tmp", "LANG=C.UTF-8", "WS=" + wsEnv, "SKILL_DIR=" + skillPath},
		Path:     os.Getenv("PATH"),
		Cwd:      wsPath,
		Mounts:   []Mount{{Host: ws, Sandbox: "/workspace", Writable: true}, {Host: skill, Sandbox: "/workspace/skills/s"}},
		Hide:     []string{"/workspace/.harness"},
		HideHost: []string{filepath.Join(ws, ".harness")},
		Helper:   helper(t),
		Timeout:  timeout,
		Limits:   lim,
	}
	if edit != nil {
		edit(&spec)
	}
	res, err := Run(context.Background(), backend, spec)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return res, ws
}

// TestScriptNeverSeesGORACE: the race detector's settings harness hands
// its Landlock helper are taken out before the script starts; a script's
// environment is what harness gives it, on every backend.
func TestScriptNeverSeesGORACE(t *testing.T) {
	// An empty value, and one whose newline would start a line of its
	// own in a naive parse of the environment.
	for _, v := range []string{"atexit_sleep_ms=0 halt_on_error=0", "", "atexit_sleep_ms=0\nLEAKED=1\x01\xff"} {
		t.Setenv("GORACE", v)
		for _, b := range backends {
			t.Run(fmt.Sprintf("%s/%q", b, v), func(t *testing.T) {
				res, _ := sandboxed(t, b, "env\n", Limits{}, 30*time.Second)
				if res.ExitCode != 0 || !strings.Contains(string(res.Stdout), "LANG=C.UTF-8") {
					t.Fatalf("exit %d stdout %q stderr %q", res.ExitCode, res.Stdout, res.Stderr)
				}
				for _, kv := range strings.Split(string(res.Stdout), "\n") {
					if strings.HasPrefix(kv, "GORACE=") || strings.HasPrefix(kv, "LEAKED=") {
						t.Errorf("the script saw GORACE: %q", res.Stdout)
					}
				}
			})
		}
	}
}

// TestScriptKeepsItsOwnGORACE: a GORACE the script is given (an operator's
// --pass-env, an MCP server's env) reaches it unchanged and alone, whether
// or not harness has one of its own for its helper, with and without the
// execute layer (whose helper runs inside bwrap too). The value is not
// the race detector's syntax: under -race, a helper that read it as its
// own would stop before the script ("expected '=' in GORACE").
func TestScriptKeepsItsOwnGORACE(t *testing.T) {
	for _, own := range []string{"", "atexit_sleep_ms=0"} {
		for _, b := range backends {
			for _, limitExec := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/exec-limited=%v/harness=%q", b, limitExec, own), func(t *testing.T) {
					if own != "" {
						t.Setenv("GORACE", own)
					} else if v, ok := os.LookupEnv("GORACE"); ok {
						t.Setenv("GORACE", v)
						os.Unsetenv("GORACE")
					}
					// Builtins only: the execute layer lets bash alone run.
					res, _ := sandboxedSpec(t, b, "if [ -n \"${GORACE+x}\" ]; then printf 'GORACE=%s\\n' \"$GORACE\"; fi\n", Limits{}, 30*time.Second, nil, func(s *Spec) {
						s.Env = append(s.Env, "GORACE=given to the script")
						s.LimitExec = limitExec
					})
					if res.ExitCode != 0 {
						t.Fatalf("exit %d stdout %q stderr %q", res.ExitCode, res.Stdout, res.Stderr)
					}
					var got []string
					for _, kv := range strings.Split(string(res.Stdout), "\n") {
						if strings.HasPrefix(kv, "GORACE=") {
							got = append(got, kv)
						}
					}
					if !slices.Equal(got, []string{"GORACE=given to the script"}) {
						t.Errorf("the script's GORACE = %q, want only its own", got)
					}
				})
			}
		}
	}
}

// TestScriptCannotReadHarnessEnviron: a script that reads the environment
// of every process it can see (its helper's, which holds harness's GORACE,
// and harness's own) finds nothing of harness's environment.
func TestScriptCannotReadHarnessEnviron(t *testing.T) {
	t.Setenv("GORACE", "atexit_sleep_ms=0 log_path=/tmp/gorace-marker-7f3a")
	t.Setenv("HARNESS_ENV_MARKER", "marker-7f3a")
	script := `n=0
for f in /proc/[0-9]*/environ /proc/self/environ; do
  while IFS= read -r -d '' kv; do
    n=$((n+1))
    case "$kv" in *7f3a*) echo "LEAK $f $kv";; esac
  done < "$f" 2>/dev/null
done
echo "read=$n"
`
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			res, _ := sandboxed(t, b, script, Limits{}, 30*time.Second)
			if res.ExitCode != 0 || !strings.Contains(string(res.Stdout), "read=") {
				t.Fatalf("exit %d stdout %q stderr %q", res.ExitCode, res.Stdout, res.Stderr)
			}
			if strings.Contains(string(res.Stdout), "LEAK") {
				t.Errorf("the script read harness's environment:\n%s", res.Stdout)
			}
		})
	}
}

func TestSandboxRunsAndConfines(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) { testConfines(t, b) })
	}
}

func testConfines(t *testing.T, backend Backend) {
	home, _ := os.UserHomeDir()
	marker := filepath.Join(home, fmt.Sprintf(".harness-test-marker-%d", os.Getpid()))
	os.WriteFile(marker, []byte("host secret"), 0o644)
	defer os.Remove(marker)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	udpPort := udp.LocalAddr().(*net.UDPAddr).Port
	t.Setenv("HARNESS_API_KEY", "sk-must-not-leak")

	script := fmt.Sprintf(`
echo "id=$(id -u)"
cat %q 2>/dev/null && echo "READ-MARKER"
echo x > /etc/harness-test 2>/dev/null && echo "WROTE-ETC"
echo x > /usr/harness-test 2>/dev/null && echo "WROTE-USR"
echo ok > "$WS/sub/out.txt" && echo "WROTE-WORKSPACE"
cat "$WS/.harness/runs/secret" 2>/dev/null && echo "READ-RUNS"
echo x > "$WS/.harness/runs/new" 2>/dev/null && echo "WROTE-RUNS"
echo x >> "$SKILL_DIR/run.sh" 2>/dev/null && echo "MODIFIED-SCRIPT"
(exec 3<>/dev/udp/127.0.0.1/%d && echo UDP-PING >&3) 2>/dev/null
(exec 3<>/dev/tcp/127.0.0.1/%d) 2>/dev/null && echo "CONNECTED"
echo "procs=$(ls /proc | grep -c '^[0-9]')"
env | grep -q HARNESS_API_KEY && echo "SAW-KEY"
echo done
`, marker, port, udpPort)
	res, ws := sandboxed(t, backend, script, Limits{}, 30*time.Second)
	out := string(res.Stdout)
	if res.ExitCode != 0 || !strings.Contains(out, "done") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", res.ExitCode, out, res.Stderr)
	}
	// Loopback delivery is synchronous: had the datagram left the sandbox,
	// it would be queued by now.
	udp.SetReadDeadline(time.Now())
	if n, _, err := udp.ReadFrom(make([]byte, 64)); err == nil {
		t.Errorf("a UDP datagram reached the host (%d bytes)", n)
	}
	bads := []string{"READ-MARKER", "WROTE-ETC", "WROTE-USR", "READ-RUNS", "WROTE-RUNS", "MODIFIED-SCRIPT", "CONNECTED", "SAW-KEY"}
	if backend == BackendBwrap {
		bads = append(bads, "id=0") // only a user namespace can drop root without breaking workspace writes
	}
	for _, bad := range bads {
		if strings.Contains(out, bad) {
			t.Errorf("sandbox escape: %s\n%s", bad, out)
		}
	}
	if !strings.Contains(out, "WROTE-WORKSPACE") {
		t.Errorf("the workspace is not writable:\n%s", out)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "sub", "out.txt")); string(b) != "ok\n" {
		t.Errorf("workspace write did not land: %q", b)
	}
	var procs int
	fmt.Sscanf(out[strings.Index(out, "procs="):], "procs=%d", &procs)
	if procs > 5 {
		t.Errorf("the sandbox sees %d processes: host processes are visible", procs)
	}
}

func TestSandboxTimeoutKillsTheTree(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) { testTimeoutKillsTree(t, b) })
	}
}

func testTimeoutKillsTree(t *testing.T, backend Backend) {
	token := fmt.Sprintf("harness-timeout-%d", time.Now().UnixNano())
	// One child leaves the process group with setsid: the kill must still
	// reach it.
	script := fmt.Sprintf("bash -c 'exec -a %s sleep 1000' &\nsetsid bash -c 'exec -a %s-escaped sleep 1000' &\nexec -a %s-main sleep 1000\n", token, token, token)
	res, _ := sandboxed(t, backend, script, Limits{}, 300*time.Millisecond)
	if !res.TimedOut || res.ExitCode == 0 {
		t.Fatalf("result %+v", res)
	}
	// Poll until the kernel has torn the namespace down; the deadline only
	// turns a leak into a failure.
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := processesWith(token)
		if left == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d processes outlived the timeout", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func processesWith(token string) int {
	n := 0
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), token) {
			n++
		}
	}
	return n
}

func TestSandboxLimits(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) { testLimits(t, b) })
	}
}

func testLimits(t *testing.T, backend Backend) {
	t.Run("file size", func(t *testing.T) {
		res, ws := sandboxed(t, backend, "head -c 5000000 /dev/zero > \"$WS/sub/big\"; echo rc=$?", Limits{FileSize: 1 << 20}, 30*time.Second)
		fi, err := os.Stat(filepath.Join(ws, "sub", "big"))
		if err != nil || fi.Size() > 1<<20 {
			t.Errorf("big file: %v size %d\n%s", err, fi.Size(), res.Stdout)
		}
	})
	t.Run("output cap", func(t *testing.T) {
		res, _ := sandboxed(t, backend, "head -c 3000000 /dev/zero | tr '\\0' x", Limits{OutputCap: 1000}, 30*time.Second)
		if len(res.Stdout) != 1000 || res.StdoutLen != 3000000 || !res.Truncated {
			t.Errorf("kept %d of %d, truncated %v", len(res.Stdout), res.StdoutLen, res.Truncated)
		}
	})
	t.Run("every limit from the first instruction", func(t *testing.T) {
		// bash counts file sizes in KiB.
		res, _ := sandboxed(t, backend, "echo cpu=$(ulimit -St)/$(ulimit -Ht) fsize=$(ulimit -Sf)/$(ulimit -Hf) nofile=$(ulimit -Sn)/$(ulimit -Hn)", Limits{CPUSeconds: 7, FileSize: 1 << 20, OpenFiles: 32}, 30*time.Second)
		if want := "cpu=7/7 fsize=1024/1024 nofile=32/32"; strings.TrimSpace(string(res.Stdout)) != want {
			t.Errorf("the script's limits are %q (%s), want %q", res.Stdout, res.Stderr, want)
		}
	})
	t.Run("open files", func(t *testing.T) {
		res, _ := sandboxed(t, backend, "for i in $(seq 1 100); do eval \"exec $((i+10))</dev/null\" || { echo failed-at=$i; exit 0; }; done; echo all-open", Limits{OpenFiles: 32}, 30*time.Second)
		if !strings.Contains(string(res.Stdout), "failed-at=") {
			t.Errorf("no open-files limit: %s", res.Stdout)
		}
	})
}

func TestCommand(t *testing.T) {
	for _, tc := range []struct {
		runtime, shebang string
		want             string
		code             string
	}{
		{RuntimeBash, "#!/bin/bash", "bash /s a", ""},
		{RuntimeBash, "#!/usr/bin/env bash", "bash /s a", ""},
		{RuntimeBash, "#!/bin/bash -e", "", "script_runtime_flags"},
		{RuntimePython, "#!/usr/bin/env python3", "python3 /s a", ""},
		{RuntimeNode, "", "node /s a", ""},
		{RuntimeDeno, "#!/usr/bin/env -S deno run --allow-read --deny-net", "deno run --no-prompt --allow-read --deny-net /s a", ""},
		{RuntimeDeno, "#!/usr/bin/env -S deno run --unstable", "", "script_runtime_flags"},
		{"unknown", "", "", "script_runtime_unsupported"},
	} {
		argv, err := Command(tc.runtime, tc.shebang, "/s", []string{"a"})
		if tc.code != "" {
			if r, ok := err.(*Refusal); !ok || r.Code != tc.code {
				t.Errorf("%s %q: err %v, want %s", tc.runtime, tc.shebang, err, tc.code)
			}
			continue
		}
		if got := strings.Join(argv, " "); got != tc.want || err != nil {
			t.Errorf("%s %q: %q %v, want %q", tc.runtime, tc.shebang, got, err, tc.want)
		}
	}
}

// TestSandboxForkBomb: a fork bomb is capped and the call ends at its
// timeout with every process gone.
func TestSandboxForkBomb(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) { testForkBomb(t, b) })
	}
}

func testForkBomb(t *testing.T, backend Backend) {
	res, _ := sandboxed(t, backend, "f(){ f | f & }; f; sleep 1000", Limits{Processes: 32}, 2*time.Second)
	if res.ProcessLimit == "rlimit" && os.Geteuid() == 0 {
		testenv.Need(t, "a writable pids cgroup", errors.New("RLIMIT_NPROC does not bind root"))
	}
	if res.ExitCode == 0 && !res.TimedOut {
		t.Fatalf("fork bomb exited cleanly: %+v", res)
	}
	if res.ProcessLimit == "pids-cgroup" && res.ForkRefusals == 0 {
		t.Errorf("the process limit was never reached: %+v", res)
	}
}

// TestSandboxProcessLimitBound holds the process limit to its number: a
// script that forks as many sleepers as it can must get fewer than the
// limit (the script and its interpreter count too), not merely fail.
func TestSandboxProcessLimitBound(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			const limit = 16
			script := `exec python3 -c '
import os, sys
n = 0
for _ in range(200):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        os.close(1)
        import time
        time.sleep(60)
        os._exit(0)
    n += 1
print("forked", n, flush=True)
'`
			res, _ := sandboxed(t, b, script, Limits{Processes: limit}, 20*time.Second)
			if res.ProcessLimit == "rlimit" && os.Geteuid() == 0 {
				testenv.Need(t, "a writable pids cgroup", errors.New("RLIMIT_NPROC does not bind root"))
			}
			var n int
			if _, err := fmt.Sscanf(string(res.Stdout), "forked %d", &n); err != nil {
				t.Fatalf("no count from the script: %q (stderr %q)", res.Stdout, res.Stderr)
			}
			if n <= 0 || n >= limit {
				t.Errorf("forked %d children under a limit of %d processes", n, limit)
			}
		})
	}
}

// A sandbox whose limits cannot be set runs nothing: the gate shell sets
// them before it execs anything, and exits when one is refused (here an
// open-file limit above what the kernel allows any process).
func TestGateLimitRefusedRunsNothing(t *testing.T) {
	for _, backend := range backends {
		t.Run(string(backend), func(t *testing.T) {
			_, err := Probe(context.Background(), backend, helper(t))
			testenv.Need(t, "sandbox backend "+string(backend), err)
			ws := t.TempDir()
			os.Chmod(ws, 0o777)
			marker := filepath.Join(ws, "ran")
			res, err := Run(context.Background(), backend, Spec{
				Argv: []string{"bash", "-c", "touch " + marker}, Env: []string{"PATH=/usr/bin:/bin"}, Path: os.Getenv("PATH"), Cwd: ws,
				Mounts: []Mount{{Host: ws, Sandbox: ws, Writable: true}}, Helper: helper(t), Limits: Limits{OpenFiles: 1 << 40},
				Timeout: 30 * time.Second,
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitCode != 125 || !strings.Contains(string(res.Stderr), "cannot take its limits") {
				t.Errorf("the gate ended with exit %d, stderr %q; want exit 125 and the refusal", res.ExitCode, res.Stderr)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Error("the command ran without its limits")
			}
		})
	}
}
