package scripts

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A relative PATH entry names a different directory for every working
// directory harness happens to have: a program is looked up only in
// absolute entries, and the lookup says which it skipped.
func TestLookupBinarySkipsRelativePathEntries(t *testing.T) {
	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := copyFile(self, filepath.Join(dir, "probe-bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for _, tc := range []struct {
		name, path string
		found      bool
		skipped    string
	}{
		{"dot", ".", false, `"."`},
		{"empty entry", ":", false, `""`},
		{"relative dir", "sub/../.", false, `"sub/../."`},
		{"absolute after a relative one", ".:" + dir, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := LookupBinary("probe-bin", tc.path)
			if tc.found {
				if err != nil || p != filepath.Join(dir, "probe-bin") {
					t.Fatalf("LookupBinary = %q, %v; want %s", p, err, filepath.Join(dir, "probe-bin"))
				}
				return
			}
			if err == nil {
				t.Fatalf("LookupBinary found %q through a relative PATH entry", p)
			}
			if !strings.Contains(err.Error(), "relative") || !strings.Contains(err.Error(), tc.skipped) {
				t.Fatalf("error %q does not name the skipped entry %s", err, tc.skipped)
			}
		})
	}
}

// Every walk up a path ends, whatever the path: a relative one
// (filepath.Dir(".") is ".") is refused rather than walked forever.
func TestSearchableByOthersEnds(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for _, p := range []string{".", "sub", "./x/..", ""} {
		if err := searchableByOthers(p); err == nil {
			t.Errorf("searchableByOthers(%q) = nil; a relative path is refused", p)
		}
		if err := reachableByOthers(p); err == nil {
			t.Errorf("reachableByOthers(%q) = nil; a relative path is refused", p)
		}
	}
	if err := searchableByOthers("/"); err != nil {
		t.Errorf("searchableByOthers(/) = %v", err)
	}
}
