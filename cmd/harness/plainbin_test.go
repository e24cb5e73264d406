package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// onRaceBinary are the scripts whose harness stays the race-built test
// binary when the tests run with -race. A race-built harness costs each
// script several times the CPU of a plain one, and nearly every script
// drives code the package tests already run under the race detector in
// one goroutine; these drive goroutines at once in a harness process in
// ways no package test does:
//   - batch_run and batch_shards: --jobs 4, runs side by side sharing one
//     registry snapshot, audit cache and result record;
//   - pipeline_run: --jobs 2, independent phases at once;
//   - run_interrupt: a signal arriving while the loop, a tool and the
//     journal writer are busy;
//   - run_mcp_server: a server crashing mid-call and its restart, against
//     the MCP SDK's reader goroutines.
var onRaceBinary = map[string]bool{
	"batch_run":      true,
	"batch_shards":   true,
	"pipeline_run":   true,
	"run_interrupt":  true,
	"run_mcp_server": true,
}

var plainHarness struct {
	once sync.Once
	dir  string // holds harness, a test binary of this package built without -race
	err  error
}

// usePlainHarness puts a harness built without the race detector first on
// the script's PATH, unless the test binary itself is plain or the script
// is one of onRaceBinary. The plain binary is this package's test binary
// too, so TestMain dispatches `harness` and the crash hook as it does here.
func usePlainHarness(env *testscript.Env) error {
	name := strings.TrimPrefix(filepath.Base(env.WorkDir), "script-")
	if !raceBuild || onRaceBinary[name] {
		return nil
	}
	dir, err := plainHarnessDir()
	if err != nil {
		return err
	}
	env.Setenv("PATH", dir+string(filepath.ListSeparator)+env.Getenv("PATH"))
	return nil
}

// plainHarnessDir builds the plain harness once per test binary and
// returns the directory that holds it.
func plainHarnessDir() (string, error) {
	plainHarness.once.Do(func() {
		dir := filepath.Join(testCacheDir, "plain-harness")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			plainHarness.err = err
			return
		}
		cmd := exec.Command("go", "test", "-c", "-o", filepath.Join(dir, "harness"), ".")
		if out, err := cmd.CombinedOutput(); err != nil {
			plainHarness.err = fmt.Errorf("building harness without -race: %v\n%s", err, out)
			return
		}
		plainHarness.dir = dir
	})
	return plainHarness.dir, plainHarness.err
}

// plainHarnessBin is harnessBin for a test whose harness processes do
// one thing at a time: the plain harness when the tests run with -race
// (the package tests run that code under the detector), else this binary.
func plainHarnessBin(t *testing.T) string {
	t.Helper()
	if !raceBuild {
		return harnessBin(t)
	}
	dir, err := plainHarnessDir()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "harness")
}
