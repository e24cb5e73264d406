// Package testenv decides what a test does when something it needs is
// missing from the machine (bwrap, deno, Landlock, a writable pids
// cgroup): a developer without it gets a skip that says what to install;
// CI, whose task sets HARNESS_REQUIRE_TOOLS=1, gets a failure, so a missing
// install step can never pass as a green run.
package testenv

import (
	"os"
	"path/filepath"
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
