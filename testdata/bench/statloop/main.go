// Command statloop measures the floor that a snapshot cache keyed by stat
// fingerprints cannot go below: one fstatat per file, beneath a root
// descriptor opened as the scan opens it, on one or more threads.
//
//	go run ./testdata/bench/statloop -threads 1,2,4 DIR
//
// Each thread count is measured in a fresh process (statloop starts
// itself again), which lists DIR and then times three passes over every
// file. The first pass is what one harness invocation pays: on the
// machines of this project a process's first pass over tens of thousands
// of cached dentries costs about twice what its later passes do.
package main

import (
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	threads := flag.String("threads", "1,2,4", "comma-separated thread counts")
	child := flag.Int("child", 0, "measure this thread count in this process (used by statloop itself)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: statloop [-threads 1,2,4] DIR")
		os.Exit(2)
	}
	root := flag.Arg(0)
	if *child > 0 {
		measure(root, *child)
		return
	}
	for _, s := range strings.Split(*threads, ",") {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "statloop: -threads %q: give positive numbers\n", s)
			os.Exit(2)
		}
		cmd := exec.Command(os.Args[0], "-child", strconv.Itoa(n), root)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "statloop:", err)
			os.Exit(1)
		}
	}
}

func measure(root string, n int) {
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			rel, _ := filepath.Rel(root, p)
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "statloop:", err)
		os.Exit(1)
	}
	// Opened as skills.Scan opens a root (os.Open). Later passes over
	// descriptors opened other ways (unix.Open, with or without O_PATH)
	// measured as slow as the first one here; the first pass did not
	// depend on it.
	dirf, err := os.Open(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "statloop:", err)
		os.Exit(1)
	}
	dirfd := int(dirf.Fd())
	first := pass(dirfd, files, n)
	later := pass(dirfd, files, n)
	if d := pass(dirfd, files, n); d < later {
		later = d
	}
	per := func(d time.Duration) float64 {
		return float64(d.Nanoseconds()) * float64(n) / float64(len(files)) / 1000
	}
	fmt.Printf("%d threads: %d fstatat, first pass %.1f ms (%.2f µs each per thread), later passes %.1f ms (%.2f µs)\n",
		n, len(files), float64(first.Microseconds())/1000, per(first), float64(later.Microseconds())/1000, per(later))
}

// pass stats every file once, the list split evenly over n goroutines.
func pass(dirfd int, files []string, n int) time.Duration {
	start := time.Now()
	var wg sync.WaitGroup
	for w := range n {
		part := files[w*len(files)/n : (w+1)*len(files)/n]
		wg.Go(func() {
			var st unix.Stat_t
			for _, f := range part {
				_ = unix.Fstatat(dirfd, f, &st, unix.AT_SYMLINK_NOFOLLOW)
			}
		})
	}
	wg.Wait()
	return time.Since(start)
}
