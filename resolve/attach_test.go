package resolve

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/harness-dev/harness/internal/testenv"
)

// TestAttachRefusesWhatIsNotAFile: what --attach names is judged by what
// opening it gives. A FIFO must be refused without waiting for a writer,
// a link to a device or a directory refused, and an oversized file
// refused with its size.
func TestAttachRefusesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	testenv.Must(t, syscall.Mkfifo(fifo, 0o644))
	zero := filepath.Join(dir, "zero.md")
	testenv.Must(t, os.Symlink("/dev/zero", zero))
	big := filepath.Join(dir, "big.md")
	testenv.Must(t, os.WriteFile(big, bytes.Repeat([]byte("a"), maxAttachment+1), 0o644))
	ok := filepath.Join(dir, "ok.md")
	testenv.Must(t, os.WriteFile(ok, []byte("notes"), 0o644))
	for _, tc := range []struct {
		path, want string
	}{
		{fifo, "not a readable file"},
		{zero, "not a readable file"},
		{dir, "not a readable file"},
		{filepath.Join(dir, "missing.md"), "not a readable file"},
		{big, "at most 1048576 can be attached"},
		{ok, ""},
	} {
		t.Run(filepath.Base(tc.path), func(t *testing.T) {
			got, err := Attachments([]string{tc.path})
			if tc.want == "" {
				if err != nil || len(got) != 1 || got[0].Content != "notes" {
					t.Fatalf("Attachments = %+v, %v", got, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestAttachSwappedWhileRead: the file is replaced, over and over, by one
// larger than the bound; whatever is accepted is within the bound and is
// the small file's content, never a mix.
func TestAttachSwappedWhileRead(t *testing.T) {
	dir := t.TempDir()
	small, big := filepath.Join(dir, "small"), filepath.Join(dir, "big")
	path := filepath.Join(dir, "attach.md")
	testenv.Must(t, os.WriteFile(path, []byte("small"), 0o644))
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; !stop.Load(); i++ {
			if i%2 == 0 {
				os.WriteFile(big, bytes.Repeat([]byte("b"), maxAttachment+4096), 0o644)
				os.Rename(big, path)
			} else {
				os.WriteFile(small, []byte("small"), 0o644)
				os.Rename(small, path)
			}
		}
	}()
	defer func() { stop.Store(true); <-done }()
	for range 300 {
		got, err := Attachments([]string{path})
		if err != nil {
			continue
		}
		if c := got[0].Content; c != "small" {
			t.Fatalf("accepted %d bytes that are not the small file", len(c))
		}
	}
}
