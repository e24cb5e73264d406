package scripts

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/testenv"
)

// TestLauncherCredentials: with harness as root, the process bwrap runs
// as (the gate's pid, once it has exec'd bwrap) is the sandbox user with
// no supplementary group, no capability in any set and no_new_privs, and
// is in the call's pids and memory cgroups, before bwrap sets anything
// up. Read from /proc while the script waits on its input.
func TestLauncherCredentials(t *testing.T) {
	testenv.NeedRoot(t, "the sandbox drops to its own user only when harness is root")
	_, err := Probe(context.Background(), BackendBwrap, "")
	testenv.Need(t, "sandbox backend bwrap", err)
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	pr, err := Start(context.Background(), BackendBwrap, Spec{
		Argv: []string{"bash", "-c", "echo ready; read x"}, Env: []string{"PATH=/usr/bin:/bin"}, Path: os.Getenv("PATH"), Cwd: "/workspace",
		Mounts: []Mount{{Host: ws, Sandbox: "/workspace", Writable: true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Stop()
	line, err := bufio.NewReader(pr.Stdout).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("the script did not start: %q %v", line, err)
	}
	pid := pr.cmd.Process.Pid
	if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); strings.TrimSpace(string(comm)) != "bwrap" {
		t.Fatalf("process %d is %q, not bwrap", pid, comm)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"Uid": "65534\t65534\t65534\t65534", "Gid": "65534\t65534\t65534\t65534", "Groups": "",
		"CapInh": "0000000000000000", "CapPrm": "0000000000000000", "CapEff": "0000000000000000",
		"CapBnd": "0000000000000000", "CapAmb": "0000000000000000", "NoNewPrivs": "1",
	}
	for _, l := range strings.Split(string(status), "\n") {
		k, v, _ := strings.Cut(l, ":")
		if w, ok := want[k]; ok {
			if got := strings.TrimSpace(v); got != w {
				t.Errorf("%s: %q, want %q", k, got, w)
			}
			delete(want, k)
		}
	}
	if len(want) > 0 {
		t.Errorf("not in /proc/%d/status: %v", pid, want)
	}
	if pr.p.cg == nil {
		testenv.Need(t, "writable pids and memory cgroups", errors.New("none could be made"))
	}
	cgroups, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	for _, d := range pr.p.cg.dirs() {
		hierarchy, name := filepath.Base(filepath.Dir(d)), filepath.Base(d)
		if !strings.Contains(string(cgroups), ":"+hierarchy+":/"+name+"\n") {
			t.Errorf("not in the call's cgroup %s:\n%s", d, cgroups)
		}
	}
	pr.Stdin.Close()
	select {
	case <-pr.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the script did not end when its input closed")
	}
}
