package skills

import (
	"path/filepath"
	"testing"
)

func TestBelow(t *testing.T) {
	for _, c := range []struct {
		base, p, want string
		ok            bool
	}{
		{"/r", "/r/a/b.md", "a/b.md", true},
		{"/", "/a", "", false}, // the root of the file system takes the long way
		{"/r", "/r", "", false},
		{"/r", "/r/", "", false},
		{"/r", "/rx/a", "", false},
		{"/r", "/r/a/../b", "", false},
		{"/r", "/r/./a", "", false},
		{"/r", "/r//a", "", false},
		{"r", "r/a", "", false},
	} {
		got, ok := below(c.base, c.p)
		if got != c.want || ok != c.ok {
			t.Errorf("below(%q, %q) = %q, %v; want %q, %v", c.base, c.p, got, ok, c.want, c.ok)
		}
	}
}

// FuzzBelow holds the shortcut to filepath.Rel wherever it answers.
func FuzzBelow(f *testing.F) {
	f.Add("/r", "/r/a/b")
	f.Add("/a/..", "/a/../c")
	f.Add("/a/./b", "/a/./b/c")
	f.Add("/", "/x/y")
	f.Fuzz(func(t *testing.T, base, p string) {
		got, ok := below(base, p)
		if !ok {
			return
		}
		want, err := filepath.Rel(base, p)
		if err != nil || got != want {
			t.Fatalf("below(%q, %q) = %q, filepath.Rel gives %q, %v", base, p, got, want, err)
		}
	})
}
