package scripts

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Cgroup v1 hierarchies where per-call limits are made. Both bind root
// too, which rlimits do not (RLIMIT_NPROC) or cannot (RLIMIT_AS breaks Go
// and V8), and harness often runs as root in CI.
const (
	pidsCgroupRoot   = "/sys/fs/cgroup/pids"
	memoryCgroupRoot = "/sys/fs/cgroup/memory"
)

var cgroupSeq atomic.Int64

// sweepOnce removes, once per process, what harness processes that died
// without cleaning up (killed, or the machine's CI job cancelled) left in
// the hierarchies: cgroups are not files of a run, so nothing else would
// remove them, and each empty memory cgroup of cgroup v1 keeps kernel
// memory for as long as it exists.
var sweepOnce sync.Once

// callCgroups are the per-execution cgroups of one script call: a pids
// cgroup capping the number of processes and a memory cgroup capping what
// they use. Either is nil where no writable hierarchy exists.
type callCgroups struct {
	pids, memory string
}

func newCallCgroups(processes, memory uint64) *callCgroups {
	sweepOnce.Do(func() {
		for _, root := range []string{pidsCgroupRoot, memoryCgroupRoot} {
			sweepStaleCgroups(root, time.Now())
		}
	})
	name := fmt.Sprintf("harness-%d-%d", os.Getpid(), cgroupSeq.Add(1))
	c := &callCgroups{
		pids:   makeCgroup(pidsCgroupRoot, name, map[string]uint64{"pids.max": processes}),
		memory: makeCgroup(memoryCgroupRoot, name, map[string]uint64{"memory.limit_in_bytes": memory, "memory.memsw.limit_in_bytes": memory}),
	}
	if c.pids == "" && c.memory == "" {
		return nil
	}
	return c
}

// makeCgroup creates root/name and writes its limits, or returns "" when
// the hierarchy is missing or not writable. A limit file the kernel lacks
// (memsw without swap accounting) is skipped.
func makeCgroup(root, name string, limits map[string]uint64) string {
	if fi, err := os.Stat(filepath.Join(root, "cgroup.procs")); err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	dir := filepath.Join(root, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return ""
	}
	for _, f := range []string{"pids.max", "memory.limit_in_bytes", "memory.memsw.limit_in_bytes"} {
		v, ok := limits[f]
		if !ok {
			continue
		}
		p := filepath.Join(dir, f)
		if _, err := os.Stat(p); err != nil && f == "memory.memsw.limit_in_bytes" {
			continue
		}
		if err := os.WriteFile(p, []byte(strconv.FormatUint(v, 10)), 0o644); err != nil {
			os.Remove(dir)
			return ""
		}
	}
	return dir
}

// staleAfter is how old a dead process's cgroup must be before a sweep
// removes it. A harness in another pid namespace sharing the hierarchy
// looks dead from here; the cgroup of its call is joined within
// milliseconds of being made, and the kernel refuses to remove a cgroup
// that holds a process, so only one made and left empty this long is
// taken.
const staleAfter = time.Minute

// sweepStaleCgroups removes root's call cgroups (harness-PID-N) whose
// process no longer exists, that hold no process and that were made
// before now-staleAfter. Each removal is the kernel's rmdir, which
// refuses a cgroup with processes in it; anything it cannot remove stays.
func sweepStaleCgroups(root string, now time.Time) (removed int) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return 0
	}
	self := os.Getpid()
	for _, e := range entries {
		pid, ok := callCgroupPid(e.Name())
		if !ok || !e.IsDir() || pid == self || processExists(pid) {
			continue
		}
		dir := filepath.Join(root, e.Name())
		fi, err := os.Lstat(dir)
		if err != nil || now.Sub(fi.ModTime()) < staleAfter {
			continue
		}
		if os.Remove(dir) == nil {
			removed++
		}
	}
	return removed
}

// callCgroupPid reads the harness process id from a call cgroup's name,
// harness-PID-N.
func callCgroupPid(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "harness-")
	if !ok {
		return 0, false
	}
	p, n, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(p)
	if err != nil || pid <= 0 {
		return 0, false
	}
	if _, err := strconv.ParseUint(n, 10, 64); err != nil {
		return 0, false
	}
	return pid, true
}

// processExists says whether pid names a process in this pid namespace;
// a process of another user (EPERM) exists too.
func processExists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func (c *callCgroups) dirs() []string {
	var out []string
	for _, d := range []string{c.pids, c.memory} {
		if d != "" {
			out = append(out, d)
		}
	}
	return out
}

// forkRefusals is how many forks the pids limit refused.
func (c *callCgroups) forkRefusals() int {
	if c.pids == "" {
		return 0
	}
	b, err := os.ReadFile(filepath.Join(c.pids, "pids.events"))
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(b)), "max")))
	return n
}

// oomKilled reports whether the memory limit killed a process.
func (c *callCgroups) oomKilled() bool {
	if c.memory == "" {
		return false
	}
	b, err := os.ReadFile(filepath.Join(c.memory, "memory.oom_control"))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if n, ok := strings.CutPrefix(line, "oom_kill "); ok && strings.TrimSpace(n) != "0" {
			return true
		}
	}
	return false
}

// pids lists the processes still in the call's cgroups.
func (c *callCgroups) procs() []int {
	seen := map[int]bool{}
	var out []int
	for _, d := range c.dirs() {
		b, _ := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil && !seen[pid] {
				seen[pid] = true
				out = append(out, pid)
			}
		}
	}
	return out
}

// killAll kills every process still in the cgroups, and again any that a
// dying one started meanwhile, until none is left or about 50 ms have
// passed. It waits on each killed process's descriptor (pidfd) rather than
// sleeping: what is usually left after a call is bwrap's init, whose exit
// tears down the sandbox's namespaces, and a fixed back-off overshot that
// by a millisecond or more on every call.
func (c *callCgroups) killAll() {
	deadline := time.Now().Add(50 * time.Millisecond)
	for {
		ps := c.procs()
		if len(ps) == 0 {
			return
		}
		var fds []unix.PollFd
		for _, pid := range ps {
			fd, err := unix.PidfdOpen(pid, 0)
			if err != nil {
				syscall.Kill(pid, syscall.SIGKILL) // gone already, or no pidfd: the next listing tells
				continue
			}
			unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
			fds = append(fds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
		}
		left := time.Until(deadline)
		if left <= 0 {
			for _, f := range fds {
				unix.Close(int(f.Fd))
			}
			return
		}
		if len(fds) == 0 {
			time.Sleep(min(left, 250*time.Microsecond))
		}
		// A pidfd is readable once its process has exited; wait for all.
		for i := range fds {
			for time.Now().Before(deadline) {
				n, err := unix.Poll(fds[i:i+1], int(max(time.Until(deadline).Milliseconds(), 1)))
				if n != 0 || err != unix.EINTR {
					break
				}
			}
			unix.Close(int(fds[i].Fd))
		}
	}
}

// remove deletes the cgroups once their processes are gone; the kernel
// refuses while any remain, so it waits a little for the tree to exit.
func (c *callCgroups) remove() {
	for _, d := range c.dirs() {
		retry(time.Second, func() bool {
			err := os.Remove(d)
			return err == nil || os.IsNotExist(err)
		})
	}
}

// retry calls done until it reports true or about limit has passed. The
// first waits are short: a tree that has just been killed is usually gone
// within a millisecond, and every call of a script pays this wait.
func retry(limit time.Duration, done func() bool) {
	wait, waited := 250*time.Microsecond, time.Duration(0)
	for !done() && waited < limit {
		time.Sleep(wait)
		waited += wait
		wait = min(wait*2, 10*time.Millisecond)
	}
}
