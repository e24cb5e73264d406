package main

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// resume reads the --result-file already there to see whose it is: a FIFO
// put there is judged by its descriptor and not waited on.
func TestHoldsRunResultWaitsOnNoFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "result.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan bool, 1)
	go func() { done <- holdsRunResult(fifo, t.TempDir()) }()
	select {
	case held := <-done:
		if held {
			t.Fatal("a FIFO was taken for a run's result")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the result file's check waited on a FIFO")
	}
}
