package scripts

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/testenv"
)

// A harness killed mid-call leaves its call's cgroups behind; the next
// harness to make one removes those of processes that are gone, and
// nothing else: not its own, not a live process's, not a young one (a
// harness in another pid namespace may have just made it), not one that
// still holds a process, not a directory harness did not name.
func TestSweepStaleCgroups(t *testing.T) {
	testenv.NeedRoot(t, "only root makes cgroups")
	root := pidsCgroupRoot
	if makeCgroup(root, fmt.Sprintf("harness-probe-%d", os.Getpid()), nil) == "" {
		testenv.Need(t, "a writable pids cgroup hierarchy", errors.New("none could be made"))
	}
	os.Remove(filepath.Join(root, fmt.Sprintf("harness-probe-%d", os.Getpid())))

	// A pid above pid_max names no process.
	b, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		t.Fatal(err)
	}
	pidMax, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	dead := pidMax + 1
	mk := func(name string) string {
		t.Helper()
		dir := filepath.Join(root, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(dir) })
		return dir
	}
	gone := mk(fmt.Sprintf("harness-%d-1", dead))
	young := mk(fmt.Sprintf("harness-%d-2", dead))
	own := mk(fmt.Sprintf("harness-%d-999999", os.Getpid()))
	live := mk(fmt.Sprintf("harness-%d-1", os.Getppid()))
	other := mk(fmt.Sprintf("harness-%d-x", dead))
	busy := mk(fmt.Sprintf("harness-%d-3", dead))
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		os.WriteFile(filepath.Join(root, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0)
		cmd.Process.Kill()
		cmd.Wait()
	})
	if err := os.WriteFile(filepath.Join(busy, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0); err != nil {
		t.Fatal(err)
	}

	// Sweep as if an hour had passed since every one was made but young.
	now := time.Now().Add(time.Hour)
	youngTime := now.Add(-staleAfter / 2)
	if err := os.Chtimes(young, youngTime, youngTime); err != nil {
		t.Fatalf("set a cgroup's time: %v", err)
	}
	// Others a killed harness left on this machine go too.
	if n := sweepStaleCgroups(root, now); n < 1 {
		t.Errorf("removed %d cgroups, want at least 1", n)
	}
	if _, err := os.Stat(gone); !os.IsNotExist(err) {
		t.Errorf("%s, a dead harness's empty cgroup, is still there (%v)", gone, err)
	}
	for _, dir := range []string{young, own, live, other, busy} {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("%s was removed: %v", dir, err)
		}
	}
}

func TestCallCgroupPid(t *testing.T) {
	for _, tc := range []struct {
		name string
		pid  int
		ok   bool
	}{
		{"harness-42-7", 42, true},
		{"harness-42-", 0, false},
		{"harness--7", 0, false},
		{"harness-0-1", 0, false},
		{"harness-42-7-1", 0, false},
		{"harness-probe-1", 0, false},
		{"harnes-42-7", 0, false},
		{"harness-42", 0, false},
	} {
		pid, ok := callCgroupPid(tc.name)
		if pid != tc.pid || ok != tc.ok {
			t.Errorf("callCgroupPid(%q) = %d, %v; want %d, %v", tc.name, pid, ok, tc.pid, tc.ok)
		}
	}
}
