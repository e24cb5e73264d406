package scripts

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/testenv"
)

// TestHostile runs scripts that attack the host from inside each sandbox
// backend; each attack must fail, and the limits must be recorded.
// TestHostileAsOrdinaryUser runs the same suite as a user who is not root.
func TestHostile(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			t.Run("root-only files", func(t *testing.T) { hostileFiles(t, b) })
			t.Run("privileges", func(t *testing.T) { hostilePrivileges(t, b) })
			t.Run("unix socket", func(t *testing.T) { hostileUnixSocket(t, b) })
			t.Run("memory", func(t *testing.T) { hostileMemory(t, b) })
			t.Run("daemon", func(t *testing.T) { hostileDaemon(t, b) })
			t.Run("terminal", func(t *testing.T) { hostileTerminal(t, b) })
		})
	}
}

func expectNone(t *testing.T, res *Result, bads ...string) {
	t.Helper()
	out := string(res.Stdout)
	if !strings.Contains(out, "done") {
		t.Fatalf("the script did not finish: exit %d, signal %q\nstdout:\n%s\nstderr:\n%s", res.ExitCode, res.Signal, out, res.Stderr)
	}
	for _, bad := range bads {
		if strings.Contains(out, bad) {
			t.Errorf("%s\n%s", bad, out)
		}
	}
}

// hostileFiles: /etc/shadow is root's (0640); with harness as root the
// script must not be root, and /etc holds only what scripts need.
func hostileFiles(t *testing.T, b Backend) {
	res, _ := sandboxed(t, b, `
head -c 1 /etc/shadow >/dev/null 2>&1 && echo READ-SHADOW
head -c 1 /etc/gshadow >/dev/null 2>&1 && echo READ-GSHADOW
ls /etc/ssh >/dev/null 2>&1 && echo SAW-SSH-DIR
[ "$(id -u)" = 0 ] && echo UID-0
echo done`, Limits{}, 30*time.Second)
	expectNone(t, res, "READ-SHADOW", "READ-GSHADOW", "SAW-SSH-DIR", "UID-0")
	if os.Geteuid() == 0 && res.RunAs != "uid:65534" {
		t.Errorf("harness is root and the script ran as %q", res.RunAs)
	}
}

// hostilePrivileges: no capability survives, so the host's hostname and
// device nodes are out of reach.
func hostilePrivileges(t *testing.T, b Backend) {
	orig, _ := os.Hostname()
	res, _ := sandboxed(t, b, `
python3 -c 'import socket; socket.sethostname("pwned")' 2>/dev/null && echo SETHOSTNAME
mknod "$WS/sub/blk" b 7 0 2>/dev/null && echo MKNOD-BLOCK
mknod "$WS/sub/chr" c 1 3 2>/dev/null && echo MKNOD-CHAR
grep -q '^CapEff:.*[1-9a-f]' /proc/self/status && echo HAS-CAPS
echo done`, Limits{}, 30*time.Second)
	expectNone(t, res, "SETHOSTNAME", "MKNOD-BLOCK", "MKNOD-CHAR", "HAS-CAPS")
	if h, _ := os.Hostname(); h == "pwned" {
		syscall.Sethostname([]byte(orig)) // the attack worked: undo it where we can
		t.Error("the host's hostname changed")
	}
}

// hostileUnixSocket: a host service listening on a socket file the script
// can see (here in the workspace; think docker.sock) gets no connection.
func hostileUnixSocket(t *testing.T, b Backend) {
	var ln *net.UnixListener
	script := `
python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
print("CONNECTED")
' "$WS/sub/host.sock" 2>/dev/null
echo done`
	res, _ := sandboxedWith(t, b, script, Limits{}, 30*time.Second, func(ws string) {
		l, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(ws, "sub", "host.sock"), Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		os.Chmod(filepath.Join(ws, "sub", "host.sock"), 0o777)
		ln = l
	})
	defer ln.Close()
	expectNone(t, res, "CONNECTED")
	// A connect that succeeded is queued on the listener by now.
	ln.SetDeadline(time.Now())
	if c, err := ln.Accept(); err == nil {
		c.Close()
		t.Error("the host socket accepted a connection from the sandbox")
	}
}

// hostileMemory: a script that touches more memory than the cap is
// killed and the cap is recorded as the reason.
func hostileMemory(t *testing.T, b Backend) {
	res, _ := sandboxed(t, b, `python3 -c '
b = bytearray(b"x") * (512 << 20)
print("ALLOCATED", len(b))
'
echo done`, Limits{Memory: 64 << 20}, 60*time.Second)
	if strings.Contains(string(res.Stdout), "ALLOCATED") {
		t.Errorf("512 MiB allocated under a 64 MiB cap (%s)", res.MemoryLimit)
	}
	if !res.MemoryExceeded {
		t.Errorf("the memory cap (%s) was not recorded as what stopped the script: %+v", res.MemoryLimit, res.ExitCode)
	}
}

// hostileDaemon: a daemon started with setsid and a double fork is gone
// when the call returns, with or without a pid namespace.
func hostileDaemon(t *testing.T, b Backend) {
	marker := fmt.Sprintf("harness-daemon-%d-%d", os.Getpid(), time.Now().UnixNano())
	res, _ := sandboxed(t, b, fmt.Sprintf(`
( setsid sh -c '( exec -a %s sleep 1000 ) &' & )
echo done`, marker), Limits{}, 30*time.Second)
	expectNone(t, res)
	if pids := processesNamed(marker); len(pids) > 0 {
		for _, p := range pids {
			syscall.Kill(p, syscall.SIGKILL)
		}
		t.Errorf("the daemon outlived its call: pids %v", pids)
	}
}

func processesNamed(marker string) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		b, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if strings.Contains(string(b), marker) {
			out = append(out, pid)
		}
	}
	return out
}

// hostileTerminal: the script has no controlling terminal to write to.
func hostileTerminal(t *testing.T, b Backend) {
	res, _ := sandboxed(t, b, `
( echo pwned > /dev/tty ) 2>/dev/null && echo WROTE-TTY
echo done`, Limits{}, 30*time.Second)
	expectNone(t, res, "WROTE-TTY")
}

// TestHostileAsOrdinaryUser runs TestHostile and the manifest tests
// (narrowed views, read-only paths, the execute limit) again as a user
// who is not root (uid 4242): there the cgroups are out of reach, so the
// process and memory limits, and the daemon cleanup, take their other
// paths, and no idmapped mount is made.
func TestHostileAsOrdinaryUser(t *testing.T) {
	testenv.AsUser(t, 4242, "TestHostile", "TestNarrowedView", "TestReadOnlyInsideWritable", "TestExecLimited", "TestNarrowedViewRefusesLinks",
		"TestExecLimitHoldsAgainstLoader", "TestExecLimitHoldsAgainstAnonymousFiles", "TestExecLimitKeepsRuntimes", "TestExecTempRuns", "TestReadOnlyModesKept",
		"TestScriptNeverSeesGORACE", "TestScriptKeepsItsOwnGORACE", "TestScriptCannotReadHarnessEnviron")
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// TestRuntimeInPrivateDirectory: with harness as root, a runtime under a
// directory only root can enter (a checkout's tools under /root) still
// runs: the sandbox user gets a link to it, not a refusal.
func TestRuntimeInPrivateDirectory(t *testing.T) {
	testenv.NeedRoot(t, "only root drops privileges for scripts")
	private := t.TempDir() // 0700
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal(err)
	}
	if err := copyFile(bash, filepath.Join(private, "mybash"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			_, err := Probe(context.Background(), b, helper(t))
			testenv.Need(t, "sandbox backend "+string(b), err)
			ws := t.TempDir()
			cwd := "/workspace"
			if b != BackendBwrap {
				cwd = ws // no mount namespace: host paths
			}
			res, err := Run(context.Background(), b, Spec{
				Argv: []string{"mybash", "-c", "echo ran-from-private"}, Env: []string{"PATH=/usr/bin:/bin"}, Path: private,
				Cwd: cwd, Mounts: []Mount{{Host: ws, Sandbox: "/workspace", Writable: true}}, Helper: helper(t), Timeout: 30 * time.Second,
			})
			if err != nil || !strings.Contains(string(res.Stdout), "ran-from-private") {
				t.Fatalf("run: %v %+v", err, res)
			}
		})
	}
}

// TestStaleMountRemoved: an idmapped mount point left by a harness that was
// killed (its pid is gone) is unmounted and removed by the next call.
func TestStaleMountRemoved(t *testing.T) {
	testenv.NeedRoot(t, "only root makes idmapped mounts")
	// A process that has exited: its pid is free (until reused, which a
	// quick test does not wait for).
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	stale := filepath.Join(os.TempDir(), fmt.Sprintf("%s%d-test", mountPrefix, dead.Process.Pid))
	if err := os.Mkdir(stale, 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(stale)
	if err := exec.Command("mount", "--bind", src, stale).Run(); err != nil {
		t.Fatalf("bind mount for the test: %v", err)
	}
	removeStaleMounts()
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		exec.Command("umount", "-l", stale).Run()
		t.Errorf("the stale mount point is still there (%v)", err)
	}
}
