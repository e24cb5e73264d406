package grant

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMoveBackKeepsAnOriginalInsideItsReplacement: moving back an entry
// removes what holds its name first; when the entry itself lies inside
// that (a script ran mv d tmp; mkdir d; mv tmp d/x), the entry must
// survive and what held its name must not.
func TestMoveBackKeepsAnOriginalInsideItsReplacement(t *testing.T) {
	for _, tc := range []struct{ at, rel string }{
		{"store/x", "store"},
		{"store/a/b/x", "store"},
		{"top/store/x", "top/store"},
		{"moved", "store"}, // not inside: the plain case
	} {
		t.Run(tc.at, func(t *testing.T) {
			ws := t.TempDir()
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			must(os.MkdirAll(filepath.Join(ws, tc.at), 0o755))
			must(os.WriteFile(filepath.Join(ws, tc.at, "HEAD"), []byte("original\n"), 0o644))
			must(os.MkdirAll(filepath.Join(ws, tc.rel, "planted"), 0o755))
			root, err := openRootDir(ws)
			must(err)
			defer unix.Close(root)
			must(moveBack(root, tc.at, tc.rel))
			if b, err := os.ReadFile(filepath.Join(ws, tc.rel, "HEAD")); err != nil || string(b) != "original\n" {
				t.Fatalf("the original is not back at %s: %q, %v", tc.rel, b, err)
			}
			if _, err := os.Lstat(filepath.Join(ws, tc.rel, "planted")); err == nil {
				t.Fatalf("what held %s is still there", tc.rel)
			}
			entries, _ := os.ReadDir(filepath.Join(ws, filepath.Dir(tc.rel)))
			for _, e := range entries {
				if e.Name() != filepath.Base(tc.rel) && e.Name() != "moved" && e.Name() != "top" {
					t.Errorf("left beside it: %s", e.Name())
				}
			}
		})
	}
}
