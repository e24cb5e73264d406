package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"

	"github.com/rogpeppe/go-internal/testscript"
)

// goCacheSeed is a Go build cache holding what `go test` of a module with
// one plain test needs from the standard library, built once per test
// binary with the environment run_command gives a toolchain. The scripts
// that run go test in the sandbox copy it into their --command-cache
// first: each would otherwise compile the standard library from nothing
// (about 40 s of CPU apiece) to prove what one build proves.
var goCacheSeed struct {
	once sync.Once
	dir  string
	err  error
}

// cmdGoCacheSeed copies the seed into DIR (a --command-cache):
//
//	gocache-seed gc
func cmdGoCacheSeed(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: gocache-seed DIR")
	}
	goCacheSeed.once.Do(func() { goCacheSeed.dir, goCacheSeed.err = buildGoCacheSeed() })
	ts.Check(goCacheSeed.err)
	dst := ts.MkAbs(args[0])
	ts.Check(os.MkdirAll(dst, 0o700))
	ts.Check(os.CopyFS(filepath.Join(dst, "go-build"), os.DirFS(filepath.Join(goCacheSeed.dir, "go-build"))))
}

func buildGoCacheSeed() (string, error) {
	dir := filepath.Join(testCacheDir, "gocache-seed")
	mod := filepath.Join(dir, "mod")
	if err := os.MkdirAll(mod, 0o755); err != nil {
		return "", err
	}
	files := map[string]string{
		"go.mod":       "module example.com/seed\n\ngo 1.22\n",
		"seed_test.go": "package seed\n\nimport \"testing\"\n\nfunc TestSeed(t *testing.T) {}\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(mod, name), []byte(text), 0o644); err != nil {
			return "", err
		}
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", err
	}
	// The variables tools/command.go sets, so that the actions' keys are
	// those of a build in the sandbox.
	cmd := exec.Command(goBin, "test", "./...")
	cmd.Dir = mod
	cmd.Env = []string{"PATH=/usr/local/go/bin:/usr/local/bin:/usr/bin:/bin", "HOME=" + dir, "XDG_CACHE_HOME=" + dir,
		"GOCACHE=" + filepath.Join(dir, "go-build"), "GOMODCACHE=" + filepath.Join(dir, "go-mod"), "GOPATH=" + filepath.Join(dir, "gopath"),
		"GOTOOLCHAIN=local", "LANG=C.UTF-8"}
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the Go cache seed: %v\n%s", err, out)
	}
	return dir, nil
}
