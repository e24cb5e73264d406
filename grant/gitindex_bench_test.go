package grant

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// benchTree is a workspace of 100,000 files: 1,000 directories of 100
// files, two levels deep, with a repository's .git, a submodule and two
// nested repositories among them. Made once, kept in the temporary
// directory for the next run (remove it to make it again).
var benchTree = sync.OnceValues(func() (string, error) {
	dir := filepath.Join(os.TempDir(), "harness-gitbench-100k")
	if _, err := os.Stat(filepath.Join(dir, ".complete")); err == nil {
		return dir, nil
	}
	os.RemoveAll(dir)
	for _, d := range []string{".git/hooks", ".git/modules/sub", "d000/nested/.git", "d500/x/nested/.git"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return "", err
		}
	}
	os.WriteFile(filepath.Join(dir, ".gitmodules"), []byte("[submodule \"sub\"]\n"), 0o644)
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "sub", ".git"), []byte("gitdir: ../.git/modules/sub\n"), 0o644)
	for i := range 1000 {
		d := filepath.Join(dir, fmt.Sprintf("d%03d", i/10), fmt.Sprintf("e%d", i%10))
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", err
		}
		for j := range 100 {
			if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%03d.txt", j)), nil, 0o644); err != nil {
				return "", err
			}
		}
	}
	return dir, os.WriteFile(filepath.Join(dir, ".complete"), nil, 0o644)
})

// cpu is the CPU time this process (children: its waited-for children)
// has used: on a machine shared with other work, wall time measures the
// neighbours as much as the code.
func cpu(who int) time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(who, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportCPU(b *testing.B, who int, start time.Duration) {
	b.ReportMetric(float64(cpu(who)-start)/float64(b.N)/1e6, "cpu-ms/op")
}

func benchIndex(b *testing.B) (string, *GitIndex) {
	host, err := benchTree()
	if err != nil {
		b.Fatal(err)
	}
	x, err := ScanGit(context.Background(), host, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	// The tree was just made: every directory is racy. A run's workspace
	// is older than a second; take it as such.
	for rel, d := range x.dirs {
		d.racy = false
		x.dirs[rel] = d
	}
	return host, x
}

// BenchmarkScanGit is the run-start walk of a 100,000-file workspace.
func BenchmarkScanGit(b *testing.B) {
	host, _ := benchIndex(b)
	b.ResetTimer()
	start := cpu(syscall.RUSAGE_SELF)
	for b.Loop() {
		if _, err := ScanGit(context.Background(), host, nil, nil); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, syscall.RUSAGE_SELF, start)
}

// BenchmarkFindReference is find(1) over the same tree: what listing
// every directory costs at the least.
func BenchmarkFindReference(b *testing.B) {
	host, _ := benchIndex(b)
	if _, err := exec.LookPath("find"); err != nil {
		b.Skip("find is not installed")
	}
	b.ResetTimer()
	start := cpu(syscall.RUSAGE_CHILDREN)
	for b.Loop() {
		if err := exec.Command("find", host, "-name", ".git", "-prune").Run(); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, syscall.RUSAGE_CHILDREN, start)
}

// BenchmarkSweepUnchanged is the sweep after a call that changed no
// directory: one stat per known directory.
func BenchmarkSweepUnchanged(b *testing.B) {
	_, x := benchIndex(b)
	b.ResetTimer()
	start := cpu(syscall.RUSAGE_SELF)
	for b.Loop() {
		if made := x.Sweep(); len(made) > 0 {
			b.Fatal(made)
		}
	}
	reportCPU(b, syscall.RUSAGE_SELF, start)
	b.ReportMetric(float64(len(x.dirs)), "dirs")
}

// BenchmarkSweepOneDirectory is the sweep after a call that made a file
// in one directory (and a .git in it every tenth call): that directory
// is listed, no other.
func BenchmarkSweepOneDirectory(b *testing.B) {
	host, x := benchIndex(b)
	f := filepath.Join(host, "d042", "e1", "new.txt")
	b.ResetTimer()
	start := cpu(syscall.RUSAGE_SELF)
	i := 0
	for b.Loop() {
		os.Remove(f)
		os.WriteFile(f, nil, 0o644)
		if i%10 == 0 {
			os.Mkdir(filepath.Join(host, "d042", "e1", ".git"), 0o755)
		}
		x.Sweep()
		i++
	}
	reportCPU(b, syscall.RUSAGE_SELF, start)
}
