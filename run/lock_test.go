package run

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestRunDirectoryLock(t *testing.T) {
	dir := t.TempDir()
	first, err := lockRunDir(dir, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	_, err = lockRunDir(dir, time.Now())
	var e *Error
	if !errors.As(err, &e) || e.Exit != ExitPolicy || e.Code != "run_locked" || !strings.Contains(e.Msg, "harness pid") {
		t.Fatalf("second lock: %v", err)
	}
	first.release()
	again, err := lockRunDir(dir, time.Now())
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	again.release()
}
