package run

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/outcome"
)

func TestRunDirectoryLock(t *testing.T) {
	dir := t.TempDir()
	first, err := lockRunDir(dir, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	_, err = lockRunDir(dir, time.Now())
	var e *outcome.Error
	if !errors.As(err, &e) || e.Exit != outcome.ExitPolicy || e.Code != "run_locked" || !strings.Contains(e.Msg, "harness pid") {
		t.Fatalf("second lock: %v", err)
	}
	first.release()
	again, err := lockRunDir(dir, time.Now())
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	again.release()
}
