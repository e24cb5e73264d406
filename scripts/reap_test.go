package scripts

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/testenv"
)

// TestHelperKillsDaemonsThatLeftWithSetsid: the Landlock helper is the
// subreaper of the script's tree and kills every descendant still alive
// when the script ends, a daemon that left with setsid included. Without
// a pid namespace, and where harness is not root (no per-call cgroup), it
// is the only thing that ends such a daemon before it writes the
// workspace after its call returned.
func TestHelperKillsDaemonsThatLeftWithSetsid(t *testing.T) {
	_, err := Probe(context.Background(), BackendLandlock, helper(t))
	testenv.Need(t, "sandbox backend landlock", err)
	ws := t.TempDir()
	late := filepath.Join(ws, "late")
	cmd := exec.Command(helper(t), HelperArg, "--ro", "/usr", "--ro", "/bin", "--ro", "/lib", "--ro", "/lib64", "--rw", ws, "--rw-file", "/dev/null", "--",
		"/bin/sh", "-c", "setsid /bin/sh -c 'sleep 0.5; echo alive > "+late+"' </dev/null >/dev/null 2>&1 &")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	time.Sleep(1500 * time.Millisecond)
	if b, err := os.ReadFile(late); err == nil {
		t.Fatalf("a daemon of the script outlived the helper and wrote the workspace: %q", b)
	}
}

// TestStoppedHelperKillsDaemonsThatLeftWithSetsid: a call that is stopped
// (its timeout) while a daemon that left with setsid is alive ends that
// daemon too. The helper is in the process group that is killed, so it
// must be given the time to kill its tree first; as root the per-call
// cgroup would hide a miss, hence the helper is stopped here as harness
// stops it, without one.
func TestStoppedHelperKillsDaemonsThatLeftWithSetsid(t *testing.T) {
	_, err := Probe(context.Background(), BackendLandlock, helper(t))
	testenv.Need(t, "sandbox backend landlock", err)
	ws := t.TempDir()
	late := filepath.Join(ws, "late")
	cmd := exec.Command(helper(t), HelperArg, "--ro", "/usr", "--ro", "/bin", "--ro", "/lib", "--ro", "/lib64", "--rw", ws, "--rw-file", "/dev/null", "--",
		"/bin/sh", "-c", "setsid /bin/sh -c 'sleep 0.5; echo alive > "+late+"' </dev/null >/dev/null 2>&1 & exec sleep 30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	(&prepared{backend: BackendLandlock}).killTree(cmd)
	cmd.Wait()
	time.Sleep(1500 * time.Millisecond)
	if b, err := os.ReadFile(late); err == nil {
		t.Fatalf("a daemon of the stopped script outlived the helper and wrote the workspace: %q", b)
	}
}
