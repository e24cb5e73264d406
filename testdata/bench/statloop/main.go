// Command statloop measures the floor that a snapshot cache keyed by stat
// fingerprints cannot go below: one fstatat per file, beneath a root
// descriptor as the scan makes them, on 1 or more threads.
//
//	go run ./testdata/bench/statloop -threads 1,2,4 DIR
//
// It lists DIR first, then times three passes over every file for each
// thread count and prints the fastest.
package main

import (
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	threads := flag.String("threads", "1,2,4", "comma-separated thread counts")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: statloop [-threads 1,2,4] DIR")
		os.Exit(2)
	}
	root := flag.Arg(0)
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
	dirfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "statloop:", err)
		os.Exit(1)
	}
	for _, s := range strings.Split(*threads, ",") {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "statloop: -threads %q: give positive numbers\n", s)
			os.Exit(2)
		}
		best := time.Duration(0)
		for range 3 {
			if d := pass(dirfd, files, n); best == 0 || d < best {
				best = d
			}
		}
		fmt.Printf("%d threads: %d fstatat in %.1f ms (%.2f µs each per thread)\n",
			n, len(files), float64(best.Microseconds())/1000, float64(best.Nanoseconds())*float64(n)/float64(len(files))/1000)
	}
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
