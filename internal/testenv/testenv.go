// Package testenv decides what a test does when something it needs is
// missing from the machine (bwrap, deno, Landlock, a writable pids
// cgroup): a developer without it gets a skip that says what to install;
// CI, whose task sets HARNESS_REQUIRE_TOOLS=1, gets a failure, so a missing
// install step can never pass as a green run.
package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// RequireVar is the environment variable that turns skips into failures.
const RequireVar = "HARNESS_REQUIRE_TOOLS"

// Need stops the test when err says what is missing: a failure where
// tools are required, a skip otherwise.
func Need(t testing.TB, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv(RequireVar) != "" {
		t.Fatalf("%s is required here (%s is set) but unavailable: %v; `go tool task tools` installs what the tests need", what, RequireVar, err)
	}
	t.Skipf("%s unavailable: %v (`go tool task tools` installs it)", what, err)
}

// WriteTree creates files (slash paths relative to root, with their
// content), making directories as needed.
func WriteTree(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Must stops the test on an error from its own setup.
func Must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

var (
	buildMu    sync.Mutex
	buildCache = map[string]string{}
)

// BuildProgram builds the Go package at dir (a slash path relative to the
// module root, e.g. scripts/testdata/wasmprobe) for goos/goarch ("" for
// the host) once per test process and returns the binary's path. The
// package is the test's own fixture: building it is part of the test.
func BuildProgram(t testing.TB, dir, goos, goarch string) string {
	t.Helper()
	p, err := Build(dir, goos, goarch)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Build is BuildProgram for callers without a testing.TB (testscript
// commands).
func Build(dir, goos, goarch string) (string, error) {
	key := dir + "|" + goos + "|" + goarch
	buildMu.Lock()
	defer buildMu.Unlock()
	if p, ok := buildCache[key]; ok {
		return p, nil
	}
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	out, err := os.MkdirTemp("", "harness-testbin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(out, filepath.Base(dir))
	if goos == "wasip1" {
		bin += ".wasm"
	}
	cmd := exec.Command("go", "build", "-o", bin, "./"+dir)
	cmd.Dir = root
	cmd.Env = os.Environ()
	if goos != "" {
		cmd.Env = append(cmd.Env, "GOOS="+goos, "GOARCH="+goarch)
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s for %s/%s: %v\n%s", dir, goos, goarch, err, b)
	}
	buildCache[key] = bin
	return bin, nil
}

// moduleRoot is the directory of the module the tests belong to.
func moduleRoot() (string, error) {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(gomod))), nil
}

// NeedRoot stops the test unless it runs as root (what it checks only
// happens there: dropping privileges, idmapped mounts). CI runs as root,
// so there a non-root run fails instead of passing without the check.
func NeedRoot(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		Need(t, "root ("+why+")", errors.New("the test runs as uid "+strconv.Itoa(os.Geteuid())))
	}
}

// NeedArch stops the test unless it runs on arch (what it checks is
// translated for that architecture only); CI's machines are that one.
func NeedArch(t testing.TB, arch, why string) {
	t.Helper()
	if runtime.GOARCH != arch {
		Need(t, arch+" ("+why+")", errors.New("this is "+runtime.GOARCH))
	}
}
