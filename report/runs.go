package report

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
)

// StatusCrashed is a run whose process died (SIGKILL, OOM, power loss):
// run.json still says running, but nobody holds its lock.
const StatusCrashed = "crashed"

// RunSummary is one line of `harness runs`.
type RunSummary struct {
	RunID     string    `json:"runId"`
	RunDir    string    `json:"runDir"`
	Status    string    `json:"status"`
	Reason    string    `json:"reason,omitempty"`
	ExitCode  int       `json:"exitCode"`
	Turns     int       `json:"turns"`
	StartedAt time.Time `json:"startedAt"`
	Resumable bool      `json:"resumable"`
	// Verdict is how the run directory verified (set by the caller).
	Verdict *Verdict `json:"verification,omitempty"`
}

// List reads every run directory under dir, newest first.
func List(dir string) ([]RunSummary, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return []RunSummary{}, nil
		}
		return nil, err
	}
	out := []RunSummary{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		s, err := Summarize(filepath.Join(dir, e.Name()))
		if err != nil {
			continue // not a run directory
		}
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b RunSummary) int {
		if c := b.StartedAt.Compare(a.StartedAt); c != 0 {
			return c
		}
		return strings.Compare(b.RunID, a.RunID)
	})
	return out, nil
}

// Summarize reads one run directory's manifest.
func Summarize(dir string) (*RunSummary, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	m, err := record.ReadManifest(abs)
	if err != nil {
		return nil, err
	}
	s := &RunSummary{RunID: m.RunID, RunDir: abs, Status: m.Status, Reason: m.Reason, ExitCode: m.ExitCode,
		Turns: m.Turns, StartedAt: m.StartedAt, Resumable: m.Resumable}
	if m.Error != nil && s.Reason == "" {
		s.Reason = m.Error.Code
	}
	if m.Status == outcome.StatusRunning && !locked(abs) {
		s.Status, s.Resumable = StatusCrashed, true
	}
	return s, nil
}

// locked reports whether a live process holds the run's lock: the lock is
// an flock, which the kernel drops when its holder dies.
func locked(dir string) bool {
	f, err := artifacts.OpenBeneath(dir, record.FileLock, os.O_RDONLY, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		return true
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}
