package scripts

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// The exec view's scan judges a file it was told is regular by the
// descriptor it opens: a FIFO put there since (a shared directory an exec
// entry names) is not waited on.
func TestIsELFWaitsOnNoFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "tool")
	if err := syscall.Mkfifo(fifo, 0o755); err != nil {
		t.Fatal(err)
	}
	done := make(chan bool, 1)
	go func() { done <- isELF(fifo) }()
	select {
	case elf := <-done:
		if elf {
			t.Fatal("a FIFO was taken for an ELF file")
		}
	case <-time.After(10 * time.Second):
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		t.Fatal("the scan waited on a FIFO")
	}
	if !isELF("/bin/sh") && !isELF("/usr/bin/env") {
		t.Fatal("no ELF program found among /bin/sh and /usr/bin/env")
	}
}
