package skills

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// requires.bins names programs on PATH; the skill's author writes it.
// A name with a slash or "..", joined to each PATH directory, makes
// harness stat any host path the author likes, and the skill's
// eligibility (shown to the model by the skills tool, and deciding the
// catalog) then says whether an executable file is there: an oracle over
// the host's files for whoever wrote the skill. A bin is a file name, and
// one that is not must be missing (or the requirement refused), never
// looked up outside PATH.
func TestRequiredBinIsLookedUpOnlyOnPATH(t *testing.T) {
	pathDir := filepath.Join(t.TempDir(), "bin")
	outside := filepath.Join(t.TempDir(), "private")
	for _, d := range []string{pathDir, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "deploy-key"), []byte("#!/bin/sh\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(pathDir, filepath.Join(outside, "deploy-key"))
	if err != nil {
		t.Fatal(err)
	}
	for _, bin := range []string{rel, "./" + rel, strings.Repeat("../", 12) + strings.TrimPrefix(filepath.Join(outside, "deploy-key"), "/")} {
		m := evaluate(Requirements{Bins: []string{bin}, AnyBins: []string{bin}}, Environment{Path: pathDir, Getenv: func(string) string { return "" }, OS: "linux"})
		if len(m.Bins) == 0 || len(m.AnyBins) == 0 {
			t.Errorf("requires.bins %q was found (missing bins %v, anyBins %v): harness looked outside PATH for it", bin, m.Bins, m.AnyBins)
		}
	}
}
