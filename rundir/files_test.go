package rundir

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
)

// A lock that is not a plain file of the run directory is refused before
// anything is created, truncated or written where it leads.
func TestLockRefusesLinks(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, dir, outside string)
		// want is what the outside path must still be after the refusal
		// ("" : it must not exist).
		want string
		code string
	}{
		{"dangling link", func(t *testing.T, dir, outside string) {
			symlink(t, outside, filepath.Join(dir, record.FileLock))
		}, "", "run_dir_tampered"},
		{"link to a file", func(t *testing.T, dir, outside string) {
			write(t, outside, "keep")
			symlink(t, outside, filepath.Join(dir, record.FileLock))
		}, "keep", "run_dir_tampered"},
		{"relative link inside", func(t *testing.T, dir, outside string) {
			write(t, filepath.Join(dir, "other"), "x")
			symlink(t, "other", filepath.Join(dir, record.FileLock))
		}, "", "run_dir_tampered"},
		{"fifo", func(t *testing.T, dir, outside string) {
			if err := syscall.Mkfifo(filepath.Join(dir, record.FileLock), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, outside := t.TempDir(), filepath.Join(t.TempDir(), "target")
			tc.setup(t, dir, outside)
			l, err := TakeLock(dir, time.Now())
			if err == nil {
				l.Release()
				t.Fatal("lock taken")
			}
			if tc.code != "" {
				var e *outcome.Error
				if !errors.As(err, &e) || e.Code != tc.code || e.Exit != outcome.ExitPolicy {
					t.Fatalf("error %v, want %s", err, tc.code)
				}
			} else if !errors.Is(err, artifacts.ErrNotRegular) {
				t.Fatalf("error %v, want ErrNotRegular", err)
			}
			got, err := os.ReadFile(outside)
			switch {
			case tc.want == "" && !errors.Is(err, os.ErrNotExist):
				t.Fatalf("outside path: %q, %v; want none", got, err)
			case tc.want != "" && string(got) != tc.want:
				t.Fatalf("outside file is %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCreateRefusesArtifactsDirInSkillRoot(t *testing.T) {
	base := t.TempDir()
	ws, roots := filepath.Join(base, "ws"), filepath.Join(base, "ws", "skills")
	if err := os.MkdirAll(filepath.Join(roots, "notes"), 0o755); err != nil {
		t.Fatal(err)
	}
	symlink(t, "notes", filepath.Join(roots, "link"))
	cases := []struct {
		name, artifacts, code string
	}{
		{"the root itself", roots, "artifacts_dir_in_skill_root"},
		{"inside a skill", filepath.Join(roots, "notes", "runs"), "artifacts_dir_in_skill_root"},
		{"through a link", filepath.Join(roots, "link", "runs"), "artifacts_dir_in_skill_root"},
		{"beside the root", filepath.Join(base, "ws", "skills-runs"), ""},
		{"parent of the workspace", base, "artifacts_dir_contains_workspace"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, err := Create(tc.artifacts, "r1", ws, []string{roots})
			if tc.code == "" {
				if err != nil {
					t.Fatal(err)
				}
				os.RemoveAll(dir)
				return
			}
			var e *outcome.Error
			if !errors.As(err, &e) || e.Code != tc.code || e.Exit != outcome.ExitUsage {
				t.Fatalf("error %v, want %s", err, tc.code)
			}
			if _, err := os.Stat(filepath.Join(tc.artifacts, "r1")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("a run directory was made: %v", err)
			}
		})
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}
