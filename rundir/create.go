package rundir

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/workspace"
)

// Compiled on first use: a bounded repetition compiles to one
// instruction per repeat, which every start would otherwise pay for.
var runIDPattern = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)
})

// NewRunID is a new time-sortable id, for a run or for anything that
// holds runs (a pipeline): UTC time to the second, then random bits so
// that runs started in the same second do not collide.
func NewRunID(now time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// CheckRunID refuses an id that cannot name a directory safely.
func CheckRunID(id string) error {
	if !runIDPattern().MatchString(id) || strings.Contains(id, "..") {
		return outcome.Usage("run_id_invalid", "--run-id %q must be 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit", id)
	}
	return nil
}

// Create makes a run's directory. An existing directory is never
// reused: it belongs to another run, which `harness resume` continues.
//
// An artifacts directory that is the workspace or contains it is refused:
// the run directory would then be the workspace's own ancestor or sibling
// in reach of every tool (`--artifacts-dir .` with the workspace `.`).
// So is one inside a skill root (skillRoots, the run's resolved roots):
// read_skill_resource would hand the model earlier runs' records. Both
// are judged on the real path, before anything is made.
func Create(artifactsDir, runID, ws string, skillRoots []string) (string, error) {
	if artifactsDir == "" {
		artifactsDir = filepath.Join(".harness", "runs")
	}
	abs, err := filepath.Abs(artifactsDir)
	if err != nil {
		return "", outcome.Usage("artifacts_dir_invalid", "--artifacts-dir %s: %v", artifactsDir, err)
	}
	abs = realPath(abs)
	if workspace.Within(abs, ws) {
		return "", outcome.Usage("artifacts_dir_contains_workspace", "--artifacts-dir %s is the workspace or contains it (%s): tools could reach the run records; put run directories elsewhere, e.g. the default .harness/runs", artifactsDir, ws)
	}
	for _, root := range skillRoots {
		if workspace.Within(realPath(root), abs) {
			return "", outcome.Usage("artifacts_dir_in_skill_root", "--artifacts-dir %s is inside the skill root %s: read_skill_resource could read earlier runs' records; put run directories outside every skill root, e.g. the default .harness/runs", artifactsDir, root)
		}
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return "", outcome.Usage("artifacts_dir_invalid", "--artifacts-dir %s: %v", artifactsDir, err)
	}
	dir := filepath.Join(abs, runID)
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return "", outcome.Usage("run_exists", "run directory %s already exists: choose another --run-id, or continue it with `harness resume %s`", dir, dir)
		}
		return "", fmt.Errorf("create run directory: %w", err)
	}
	if err := os.Mkdir(filepath.Join(dir, record.DirToolOutputs), 0o755); err != nil {
		return "", fmt.Errorf("create run directory: %w", err)
	}
	return dir, nil
}

// realPath is the absolute path p with every link resolved in the part
// of it that exists: a directory not yet made is judged by where it will
// be made.
func realPath(p string) string {
	var rest []string
	for cur := filepath.Clean(p); ; {
		if real, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(append([]string{real}, rest...)...)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return filepath.Clean(p)
		}
		rest = append([]string{filepath.Base(cur)}, rest...)
		cur = parent
	}
}
