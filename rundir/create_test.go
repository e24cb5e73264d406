package rundir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzRealPath: where an artifacts directory will be made is judged on
// the real path, so realPath must agree with the kernel's resolution
// wherever the path exists, and give a clean absolute path beneath the
// resolved existing part wherever it does not.
func FuzzRealPath(f *testing.F) {
	for _, s := range []string{"", "d", "l", "l/runs", "l/../d/x", "d/./x/y", "..", "l/l2/x", "missing/l/x", "d//x/"} {
		f.Add(s)
	}
	base, err := filepath.EvalSymlinks(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(base, "d", "e"), 0o755); err != nil {
		f.Fatal(err)
	}
	for link, target := range map[string]string{"l": "d", "d/l2": "e", "dangling": "nowhere"} {
		if err := os.Symlink(target, filepath.Join(base, link)); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, rel string) {
		if strings.ContainsRune(rel, 0) {
			return
		}
		p := filepath.Join(base, rel)
		got := realPath(p)
		if !filepath.IsAbs(got) || filepath.Clean(got) != got {
			t.Fatalf("realPath(%q) = %q: not a clean absolute path", p, got)
		}
		if want, err := filepath.EvalSymlinks(p); err == nil && want != got {
			t.Fatalf("realPath(%q) = %q, the kernel resolves it to %q", p, got, want)
		}
	})
}
