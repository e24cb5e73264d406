package grant

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/harness-dev/harness/skills"
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

// An exec directory that holds the workspace, or lies in it, would let a
// call run (and read, through the view) what the model wrote: refused,
// however it is spelled. So are the root and the pseudo-filesystems whose
// names stand for other files.
func TestResolveExecFences(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "project", "ws")
	if err := os.MkdirAll(filepath.Join(ws, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "project"), filepath.Join(dir, "alias")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, entry string
		refused     bool
	}{
		{"a directory above the workspace", filepath.Join(dir, "project") + "/", true},
		{"the same through a link", filepath.Join(dir, "alias") + "/", true},
		{"the workspace itself", ws + "/", true},
		{"a directory in the workspace", filepath.Join(ws, "bin") + "/", true},
		{"an unclean path to it names nothing", dir + "/project/../", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := ResolveExec([]string{tc.entry}, "/usr/bin", ws)
			if got := len(set.Refused) > 0; got != tc.refused || slices.ContainsFunc(set.Paths, func(p string) bool { return within(ws, p) || within(p, ws) }) {
				t.Fatalf("%s: refused %q, paths %q", tc.entry, set.Refused, set.Paths)
			}
		})
	}
	for _, e := range []string{"/proc/self/root/", "/proc/self/cwd/", "/dev/fd/", "/proc/self/exe", "/sys/"} {
		if _, err := skills.ExecEntryOf(e); err == nil {
			t.Errorf("%s: accepted", e)
		}
	}
}
