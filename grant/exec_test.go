package grant

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestResolveExec(t *testing.T) {
	dir := t.TempDir()
	tools := filepath.Join(dir, "tools")
	bin := filepath.Join(dir, "bin")
	for _, d := range []string{tools, bin} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, body string, mode os.FileMode) {
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
	// A program that is a #! script (as npm is) is found by name.
	write(filepath.Join(bin, "tool.sh"), "#!/bin/sh\necho hi\n", 0o755)
	if err := os.Symlink("tool.sh", filepath.Join(bin, "tool")); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(bin, "plain"), "not a program", 0o644)
	if err := os.Symlink(tools, filepath.Join(dir, "linked")); err != nil {
		t.Fatal(err)
	}
	sh, err := filepath.EvalSymlinks("/bin/sh")
	if err != nil {
		t.Skipf("no /bin/sh: %v", err)
	}
	for _, tc := range []struct {
		name    string
		entries []string
		shown   []string // each must be in the set
		temp    bool
		missing []string
	}{
		{"a script by name", []string{"tool"}, []string{filepath.Join(bin, "tool.sh")}, false, nil},
		{"a linked program is its real file", []string{"/bin/sh"}, []string{sh}, false, nil},
		{"a directory", []string{tools + "/"}, []string{tools + "/"}, false, nil},
		{"a linked directory is its real path", []string{filepath.Join(dir, "linked") + "/"}, []string{tools + "/"}, false, nil},
		{"the temporary directory", []string{"$TMPDIR/"}, nil, true, nil},
		{"a directory named as a file", []string{tools}, nil, false, []string{tools}},
		{"a file named as a directory", []string{filepath.Join(bin, "tool.sh") + "/"}, nil, false, []string{filepath.Join(bin, "tool.sh") + "/"}},
		{"a file that is not executable", []string{filepath.Join(bin, "plain")}, nil, false, []string{filepath.Join(bin, "plain")}},
		{"a name on no PATH entry", []string{"no-such-program-here"}, nil, false, []string{"no-such-program-here"}},
		{"a path that does not exist", []string{"/no/such/dir/"}, nil, false, []string{"/no/such/dir/"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := ResolveExec(tc.entries, bin)
			for _, want := range tc.shown {
				if !slices.Contains(set.Shown, want) {
					t.Errorf("Shown = %q, want %q in it", set.Shown, want)
				}
			}
			if len(tc.shown) == 0 && len(set.Shown) != 0 {
				t.Errorf("Shown = %q, want nothing", set.Shown)
			}
			for i, p := range set.Paths {
				if !filepath.IsAbs(p) || filepath.Clean(p) != p {
					t.Errorf("Paths[%d] = %q: not a clean absolute path", i, p)
				}
			}
			if set.Temp != tc.temp || !slices.Equal(set.Missing, tc.missing) {
				t.Errorf("Temp, Missing = %v, %q; want %v, %q", set.Temp, set.Missing, tc.temp, tc.missing)
			}
		})
	}
}
