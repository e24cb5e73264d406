package scripts

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkSandboxTrivial is the cost of one sandboxed call of a trivial
// bash script (prlimit, bwrap namespaces, mounts, bash start), to compare
// with BenchmarkBashDirect: the difference is the sandbox overhead.
func BenchmarkSandboxTrivial(b *testing.B) {
	if _, err := Probe(context.Background(), BackendBwrap, ""); err != nil {
		b.Skipf("bwrap unavailable: %v", err)
	}
	ws, skill := b.TempDir(), b.TempDir()
	os.WriteFile(filepath.Join(skill, "t.sh"), []byte("#!/bin/bash\ntrue\n"), 0o555)
	spec := Spec{
		Argv: []string{"bash", "/workspace/skills/s/t.sh"}, Env: []string{"PATH=/usr/bin:/bin"}, Path: os.Getenv("PATH"), Cwd: "/workspace",
		Mounts:  []Mount{{Host: ws, Sandbox: "/workspace", Writable: true}, {Host: skill, Sandbox: "/workspace/skills/s"}},
		Timeout: 10 * time.Second,
	}
	for b.Loop() {
		res, err := Run(context.Background(), BackendBwrap, spec)
		if err != nil || res.ExitCode != 0 {
			b.Fatal(err, res)
		}
	}
}

func BenchmarkBashDirect(b *testing.B) {
	for b.Loop() {
		if err := exec.Command("bash", "-c", "true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}
