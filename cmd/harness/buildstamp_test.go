package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdBuildHarness builds cmd/harness to OUT as `go tool task build` does,
// with the -ldflags .ci/version-ldflags prints for DIR (a git checkout, or
// not), under -buildvcs=false:
//
//	build-harness DIR OUT
func cmdBuildHarness(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: build-harness DIR OUT")
	}
	root, flags := versionLdflags(ts, args[0])
	cmd := exec.Command("go", "build", "-ldflags", strings.TrimSpace(string(flags)), "-o", ts.MkAbs(args[1]), "./cmd/harness")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		ts.Fatalf("go build: %v\n%s", err, out)
	}
}

// cmdVersionLdflags prints what .ci/version-ldflags prints for DIR:
//
//	version-ldflags DIR
func cmdVersionLdflags(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: version-ldflags DIR")
	}
	_, flags := versionLdflags(ts, args[0])
	ts.Stdout().Write(flags)
}

func versionLdflags(ts *testscript.TestScript, dir string) (root string, flags []byte) {
	root, err := filepath.Abs("../..")
	ts.Check(err)
	flags, err = exec.Command(filepath.Join(root, ".ci", "version-ldflags"), ts.MkAbs(dir)).Output()
	ts.Check(err)
	return root, flags
}
