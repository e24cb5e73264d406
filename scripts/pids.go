package scripts

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// pidsCgroupRoot is where a cgroup v1 pids hierarchy is mounted. A
// process limit is enforced there for every user, root included:
// RLIMIT_NPROC does not bind root, and harness often runs as root in CI.
const pidsCgroupRoot = "/sys/fs/cgroup/pids"

var cgroupSeq atomic.Int64

// pidsCgroup is a per-execution cgroup that caps the number of processes.
type pidsCgroup struct{ dir string }

// newPidsCgroup creates a pids cgroup limited to max processes, or
// returns nil when no writable pids hierarchy exists (RLIMIT_NPROC then
// remains the only process limit).
func newPidsCgroup(max uint64) *pidsCgroup {
	fi, err := os.Stat(filepath.Join(pidsCgroupRoot, "cgroup.procs"))
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	dir := filepath.Join(pidsCgroupRoot, fmt.Sprintf("harness-%d-%d", os.Getpid(), cgroupSeq.Add(1)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil
	}
	if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.FormatUint(max, 10)), 0o644); err != nil {
		os.Remove(dir)
		return nil
	}
	return &pidsCgroup{dir: dir}
}

// wrap prefixes argv so the process joins the cgroup itself before it
// execs the command: nothing it starts can run outside the limit.
func (c *pidsCgroup) wrap(argv []string) []string {
	return append([]string{"/bin/sh", "-c", `echo $$ > "$1/cgroup.procs" && shift && exec "$@"`, "sh", c.dir}, argv...)
}

// hits is how many forks the limit refused.
func (c *pidsCgroup) hits() int {
	b, err := os.ReadFile(filepath.Join(c.dir, "pids.events"))
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(b)), "max")))
	return n
}

// killAll kills every process still in the cgroup.
func (c *pidsCgroup) killAll() {
	for range 10 {
		b, err := os.ReadFile(filepath.Join(c.dir, "cgroup.procs"))
		if err != nil || len(strings.TrimSpace(string(b))) == 0 {
			return
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// remove deletes the cgroup once its processes are gone; the kernel
// refuses while any remain, so it waits a little for the tree to exit.
func (c *pidsCgroup) remove() {
	for i := 0; i < 100; i++ {
		if err := os.Remove(c.dir); err == nil || os.IsNotExist(err) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
