package rundir

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/outcome"
)

func TestRunDirectoryLock(t *testing.T) {
	dir := t.TempDir()
	first, err := TakeLock(dir, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	_, err = TakeLock(dir, time.Now())
	var e *outcome.Error
	if !errors.As(err, &e) || e.Exit != outcome.ExitPolicy || e.Code != "run_locked" || !strings.Contains(e.Msg, "harness pid") {
		t.Fatalf("second lock: %v", err)
	}
	first.Release()
	again, err := TakeLock(dir, time.Now())
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	again.Release()
}
