package scripts

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadOnlyModesKept: a script cannot leave a read-only path with
// another mode. bwrap's read-only bind refuses chmod; Landlock has no
// right for it, so the helper sets every changed mode back after the
// script and fails the call.
func TestReadOnlyModesKept(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			ws := viewWorkspace(t)
			res := inView(t, b, ws, Mount{Writable: true, ReadOnly: []string{".git"}}, `
chmod 0666 .git/config 2>/dev/null && echo CHMOD-CONFIG
chmod 0 .git/hooks 2>/dev/null && echo CHMOD-HOOKS
chmod 0 .git 2>/dev/null && echo CHMOD-GIT
chmod 0600 sub 2>/dev/null && chmod 0755 sub && echo CHMOD-WORKSPACE
echo done`, nil)
			expectLines(t, res, []string{"done", "CHMOD-WORKSPACE"}, nil)
			for rel, want := range map[string]os.FileMode{".git": 0o755, ".git/hooks": 0o755, ".git/config": 0o644} {
				fi, err := os.Lstat(filepath.Join(ws, rel))
				if err != nil {
					t.Fatal(err)
				}
				if fi.Mode().Perm() != want {
					t.Errorf("%s has mode %o after the call, want %o", rel, fi.Mode().Perm(), want)
				}
			}
			changed := strings.Count(string(res.Stdout), "CHMOD-") > 1
			if changed && (res.ExitCode == 0 || !strings.Contains(string(res.Stderr), "protected_path")) {
				t.Errorf("the script changed a read-only mode and the call did not fail with protected_path: exit %d\nstdout:\n%s\nstderr:\n%s", res.ExitCode, res.Stdout, res.Stderr)
			}
			// A part a manifest declares read-only, beside a writable one.
			res = inView(t, b, ws, Mount{Only: []Part{{Rel: "docs"}, {Rel: "out", Writable: true}}, ReadOnly: []string{".git"}}, `
chmod 0666 docs/readme 2>/dev/null && echo CHMOD-READ-PART
chmod 0700 out 2>/dev/null && chmod 0755 out && echo CHMOD-WRITE-PART
echo done`, nil)
			expectLines(t, res, []string{"done", "CHMOD-WRITE-PART"}, nil)
			if fi, err := os.Lstat(filepath.Join(ws, "docs", "readme")); err != nil || fi.Mode().Perm() != 0o644 {
				t.Errorf("docs/readme after the call: %v %v, want mode 644", fi, err)
			}
			if strings.Contains(string(res.Stdout), "CHMOD-READ-PART") && (res.ExitCode == 0 || !strings.Contains(string(res.Stderr), "protected_path")) {
				t.Errorf("a read-only part's mode changed and the call did not fail: exit %d\n%s", res.ExitCode, res.Stderr)
			}
		})
	}
}
