package scripts

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// watchInterval is how often the watchdog samples resident memory. A
// script can overshoot the cap by what it allocates in one interval.
const watchInterval = 20 * time.Millisecond

// memoryWatchdog enforces the memory cap where no memory cgroup can be
// made (harness not root, or no memory controller): it sums the resident
// memory of every process in the script's tree and kills the tree when the
// sum passes the cap. RLIMIT_AS is no substitute: Go and V8 reserve far
// more address space than they use and die under a realistic cap.
type memoryWatchdog struct {
	exceeded atomic.Bool
	peak     atomic.Int64
	stop     context.CancelFunc
	done     chan struct{}
}

// watchMemory starts sampling the tree under root (and whatever procs
// lists, for processes that left it) until stop is called.
func watchMemory(root int, limit uint64, procs func() []int, kill func()) *memoryWatchdog {
	ctx, cancel := context.WithCancel(context.Background())
	w := &memoryWatchdog{stop: cancel, done: make(chan struct{})}
	page := int64(os.Getpagesize())
	go func() {
		defer close(w.done)
		t := time.NewTicker(watchInterval)
		defer t.Stop()
		for {
			var rss int64
			for _, pid := range treeOf(root, procs) {
				rss += residentPages(pid) * page
			}
			if rss > w.peak.Load() {
				w.peak.Store(rss)
			}
			if uint64(rss) > limit {
				w.exceeded.Store(true)
				kill()
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return w
}

func (w *memoryWatchdog) halt() {
	w.stop()
	<-w.done
}

// treeOf lists root and its descendants, following the kernel's list of
// each thread's children, plus extra processes.
func treeOf(root int, extra func() []int) []int {
	seen := map[int]bool{}
	var out []int
	var walk func(int)
	walk = func(pid int) {
		if seen[pid] {
			return
		}
		seen[pid] = true
		out = append(out, pid)
		tasks, _ := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "task"))
		for _, t := range tasks {
			b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "task", t.Name(), "children"))
			for _, f := range strings.Fields(string(b)) {
				if c, err := strconv.Atoi(f); err == nil {
					walk(c)
				}
			}
		}
	}
	walk(root)
	if extra != nil {
		for _, p := range extra() {
			walk(p)
		}
	}
	return out
}

// residentPages reads a process's resident set from /proc/PID/statm.
func residentPages(pid int) int64 {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "statm"))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.ParseInt(f[1], 10, 64)
	return n
}
