package eval

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/testenv"
)

// depthOf is how many directories lie above dir: a relative link that
// climbs that far reaches /.
func depthOf(dir string) int {
	return strings.Count(filepath.Clean(dir), string(filepath.Separator))
}

// climb is a link target that reads as staying below its directory
// (every "self/.." cancels out as written) but, self being a link to
// ".", climbs n directories when followed.
func climb(n int, rest string) string {
	return strings.Repeat("self/", n) + strings.Repeat("../", n) + rest
}

func TestCopySkill(t *testing.T) {
	src := skillWith(t, map[string]string{"scripts/run.sh": "echo hi\n", "references/a.md": "A\n"})
	testenv.Must(t, os.Symlink("../references/a.md", filepath.Join(src, "scripts", "a.md")))
	dst := t.TempDir()
	name, digest, err := copySkill(context.Background(), src, dst)
	if err != nil {
		t.Fatal(err)
	}
	if name != "demo" || digest == "" {
		t.Fatalf("name %q digest %q", name, digest)
	}
	got, err := os.ReadFile(filepath.Join(dst, "demo", "scripts", "a.md"))
	if err != nil || string(got) != "A\n" {
		t.Fatalf("a link inside the skill reads %q: %v", got, err)
	}
}

// TestCopySkillLinkOut: a skill's link that leads out of it, however
// written, is refused rather than copied into every cell's skill root.
func TestCopySkillLinkOut(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "secret")
	testenv.Must(t, os.WriteFile(outside, []byte("secret\n"), 0o644))
	for _, tc := range []struct {
		name  string
		links map[string]string
	}{
		{name: "absolute", links: map[string]string{"passwd": "/etc/passwd"}},
		{name: "absolute to a file beside", links: map[string]string{"s": outside}},
		{name: "dot dot", links: map[string]string{"up": "../x"}},
		{name: "dot dot from below", links: map[string]string{"scripts/up": "../../x"}},
		{name: "directory", links: map[string]string{"etc": "/etc"}},
		{name: "through a link to itself", links: map[string]string{"self": ".", "passwd": "@climb"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := skillWith(t, map[string]string{"scripts/run.sh": "echo hi\n"})
			for name, target := range tc.links {
				if target == "@climb" {
					target = climb(depthOf(src)+1, "etc/passwd")
				}
				testenv.Must(t, os.Symlink(target, filepath.Join(src, name)))
			}
			dst := t.TempDir()
			_, _, err := copySkill(context.Background(), src, dst)
			wantUsage(t, err, "eval_skill_invalid", "link out of the skill")
			filepath.WalkDir(dst, func(p string, d os.DirEntry, err error) error {
				if err == nil && d.Type()&os.ModeSymlink != 0 {
					if target, _ := os.Readlink(p); target != "." {
						t.Errorf("%s copied as a link to %s", p, target)
					}
				}
				return err
			})
		})
	}
}

// TestCopySkillFIFO: a FIFO in a skill is refused, without waiting.
func TestCopySkillFIFO(t *testing.T) {
	src := skillWith(t, nil)
	testenv.Must(t, syscall.Mkfifo(filepath.Join(src, "pipe"), 0o644))
	err := within(t, 5*time.Second, filepath.Join(src, "pipe"), func() error {
		_, _, err := copySkill(context.Background(), src, t.TempDir())
		return err
	})
	wantUsage(t, err, "eval_skill_invalid", "not a regular file")
}

// within runs f, failing the test if it is still running after d (then a
// writer is opened on fifo so that f can end).
func within(t *testing.T, d time.Duration, fifo string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		t.Fatalf("still running after %v (blocked on the FIFO's open?)", d)
		return nil
	}
}

func TestCopyInputs(t *testing.T) {
	base := t.TempDir()
	testenv.WriteTree(t, base, map[string]string{"evals/files/a.txt": "A", "evals/files/dir/b.txt": "B", "evals/files/dir/sub/c.txt": "C"})
	testenv.Must(t, os.Symlink("b.txt", filepath.Join(base, "evals/files/dir/b-link")))
	testenv.Must(t, os.Symlink("a.txt", filepath.Join(base, "evals/files/a-link")))
	ws := t.TempDir()
	err := copyInputs(base, []string{"evals/files/a.txt", "evals/files/dir", "evals/files/a-link", "evals/files/a.txt"}, ws, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"evals/files/a.txt": "A", "evals/files/dir/b.txt": "B", "evals/files/dir/sub/c.txt": "C",
		"evals/files/dir/b-link": "B", "evals/files/a-link": "A"} {
		if got, err := os.ReadFile(filepath.Join(ws, name)); err != nil || string(got) != want {
			t.Errorf("%s: %q %v", name, got, err)
		}
	}
	// A file named as an input is copied as what it is, not as a link.
	if fi, err := os.Lstat(filepath.Join(ws, "evals/files/a-link")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("a-link copied as %v: %v", fi.Mode(), err)
	}
}

// TestCopyInputsHostile: an eval's inputs are opened beneath the
// directory holding evals/; no name or link leads out of it, and nothing
// there makes the copy wait.
func TestCopyInputsHostile(t *testing.T) {
	outside := t.TempDir()
	testenv.Must(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("secret\n"), 0o644))
	for _, tc := range []struct {
		name  string
		input string
		links map[string]string // name beneath base: target
		fifo  string
		want  string
	}{
		{name: "link out", input: "evals/files/s", links: map[string]string{"evals/files/s": filepath.Join(outside, "secret")}, want: "escapes"},
		{name: "link to passwd", input: "evals/files/p", links: map[string]string{"evals/files/p": "/etc/passwd"}, want: "escapes"},
		{name: "relative link out", input: "evals/files/s", links: map[string]string{"evals/files/s": "../../../x"}, want: "escapes"},
		{name: "directory that is a link out", input: "evals/files/d/secret", links: map[string]string{"evals/files/d": outside}, want: "escapes"},
		{name: "directory input with a link out", input: "evals/files/dir", links: map[string]string{"evals/files/dir/s": filepath.Join(outside, "secret")}, want: "link out"},
		{name: "directory input with a relative link out", input: "evals/files/dir", links: map[string]string{"evals/files/dir/s": "../../../../x"}, want: "link out"},
		{name: "directory input with a link up to base", input: "evals/files/dir", links: map[string]string{"evals/files/dir/s": "../a.txt"}, want: "link out"},
		{name: "directory input with a self-link climb", input: "evals/files/dir", links: map[string]string{"evals/files/dir/self": ".", "evals/files/dir/s": "@climb"}, want: "link out"},
		{name: "directory input that is a link out", input: "evals/files/dir2", links: map[string]string{"evals/files/dir2": outside}, want: "escapes"},
		{name: "FIFO", input: "evals/files/pipe", fifo: "evals/files/pipe", want: "not a regular file"},
		{name: "FIFO through a link", input: "evals/files/l", fifo: "evals/files/pipe", links: map[string]string{"evals/files/l": "pipe"}, want: "not a regular file"},
		{name: "FIFO in a directory input", input: "evals/files/dir", fifo: "evals/files/dir/pipe", want: "not a regular file"},
		{name: "dot dot", input: "../x", want: "leaves"},
		{name: "absolute", input: "/etc/passwd", want: "absolute"},
		{name: "NUL", input: "evals/files/a.txt\x00", want: "control character"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			testenv.WriteTree(t, base, map[string]string{"evals/files/a.txt": "A", "evals/files/dir/b.txt": "B"})
			for name, target := range tc.links {
				if target == "@climb" {
					target = climb(depthOf(filepath.Join(base, "evals/files/dir"))+1, "etc/passwd")
				}
				testenv.Must(t, os.Symlink(target, filepath.Join(base, name)))
			}
			fifo := filepath.Join(base, "none")
			if tc.fifo != "" {
				fifo = filepath.Join(base, tc.fifo)
				testenv.Must(t, syscall.Mkfifo(fifo, 0o644))
			}
			ws := t.TempDir()
			err := within(t, 5*time.Second, fifo, func() error { return copyInputs(base, []string{tc.input}, ws, t.TempDir()) })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error saying %q", err, tc.want)
			}
			filepath.WalkDir(ws, func(p string, d os.DirEntry, err error) error {
				if err != nil {
					return err
				}
				if d.Type()&os.ModeSymlink != 0 {
					if target, _ := os.Readlink(p); target != "." {
						t.Errorf("%s copied as a link to %s", p, target)
					}
				}
				if b, _ := os.ReadFile(p); strings.Contains(string(b), "secret") || strings.Contains(string(b), "root:") {
					t.Errorf("%s copied from outside", p)
				}
				return nil
			})
		})
	}
}
