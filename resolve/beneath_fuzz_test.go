package resolve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Whatever path is given, and whatever links lie on its way, what
// Beneath returns is a clean path inside root: never absolute, never
// climbing out.
func FuzzBeneath(f *testing.F) {
	top := f.TempDir()
	ws := filepath.Join(top, "ws")
	for _, d := range []string{"ws/a/b", "other"} {
		if err := os.MkdirAll(filepath.Join(top, d), 0o755); err != nil {
			f.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"ws/up": "..", "ws/a/loop": "../..", "ws/abs": top, "to-ws": "ws", "to-a": "ws/a",
		"ws/self": ".", "cycle1": "cycle2", "cycle2": "cycle1", "ws/a/out": "../../other",
	} {
		if err := os.Symlink(target, filepath.Join(top, link)); err != nil {
			f.Fatal(err)
		}
	}
	for _, p := range []string{"ws/a/b", "to-ws/up/ws", "to-a/loop/ws/abs/ws", "cycle1/x", "ws/../ws/self/a", "ws/a/out/x", "", ".."} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		rel, ok := Beneath(filepath.Join(top, p), ws)
		if !ok {
			return
		}
		if filepath.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, "../") || filepath.Clean(rel) != rel {
			t.Fatalf("Beneath(%q) = %q", p, rel)
		}
	})
}
