// Command gentree writes a deterministic tree of skills for benchmarks:
//
//	gentree DIR SKILLS FILES BYTES
//
// makes SKILLS skill directories under DIR, each with a SKILL.md and FILES
// resources of BYTES pseudo-random bytes (the same bytes on every run).
package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
)

func main() {
	if len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: gentree DIR SKILLS FILES BYTES")
		os.Exit(2)
	}
	dir := os.Args[1]
	skills, _ := strconv.Atoi(os.Args[2])
	files, _ := strconv.Atoi(os.Args[3])
	size, _ := strconv.Atoi(os.Args[4])
	rng := rand.NewChaCha8([32]byte{'h', 'a', 'r', 'n', 'e', 's', 's'})
	buf := make([]byte, size)
	kinds := []string{"references", "assets", "templates", "scripts"}
	for s := range skills {
		name := fmt.Sprintf("skill-%05d", s)
		sd := filepath.Join(dir, name)
		for _, k := range kinds[:min(files, len(kinds))] {
			if err := os.MkdirAll(filepath.Join(sd, k), 0o755); err != nil {
				fail(err)
			}
		}
		if err := os.MkdirAll(sd, 0o755); err != nil {
			fail(err)
		}
		md := fmt.Sprintf("---\nname: %s\ndescription: Benchmark skill %d. Use when measuring.\n---\n# %s\nSee [the guide](references/f0000.md).\n", name, s, name)
		if err := os.WriteFile(filepath.Join(sd, "SKILL.md"), []byte(md), 0o644); err != nil {
			fail(err)
		}
		for f := range files {
			rng.Read(buf)
			p := filepath.Join(sd, kinds[f%len(kinds)], fmt.Sprintf("f%04d.md", f))
			if err := os.WriteFile(p, buf, 0o644); err != nil {
				fail(err)
			}
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "gentree:", err)
	os.Exit(1)
}
