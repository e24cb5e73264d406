package grant

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// benchTree is a workspace of 100,000 files: 1,000 directories of 100
// files, two levels deep, with a repository's .git, a submodule and two
// nested repositories among them. Made once per test binary.
var benchTree = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "harness-gitbench-")
	if err != nil {
		return "", err
	}
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
	return dir, nil
})

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
	for b.Loop() {
		if _, err := ScanGit(context.Background(), host, nil, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSweepUnchanged is the sweep after a call that changed no
// directory: one stat per known directory.
func BenchmarkSweepUnchanged(b *testing.B) {
	_, x := benchIndex(b)
	b.ResetTimer()
	for b.Loop() {
		if made := x.Sweep(); len(made) > 0 {
			b.Fatal(made)
		}
	}
	b.ReportMetric(float64(len(x.dirs)), "dirs")
}

// BenchmarkSweepOneDirectory is the sweep after a call that made a file
// in one directory (and a .git in it every tenth call): that directory
// is listed, no other.
func BenchmarkSweepOneDirectory(b *testing.B) {
	host, x := benchIndex(b)
	f := filepath.Join(host, "d042", "e1", "new.txt")
	b.ResetTimer()
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
}
