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
		path, ws, want string
	}{
		{fifo, "", "not a readable file"},
		{zero, "", "not a readable file"},
		{dir, "", "not a readable file"},
		{filepath.Join(dir, "missing.md"), "", "not a readable file"},
		{big, "", "at most 1048576 can be attached"},
		{ok, "", ""},
		// The same files as files of the workspace.
		{fifo, dir, "not a readable file"},
		{zero, dir, "goes through a symbolic link"},
		{dir, dir, "not a readable file"},
		{filepath.Join(dir, "missing.md"), dir, "not a readable file"},
		{big, dir, "at most 1048576 can be attached"},
		{ok, dir, ""},
	} {
		name := filepath.Base(tc.path)
		if tc.ws != "" {
			name = "in the workspace: " + name
		}
		t.Run(name, func(t *testing.T) {
			got, err := Attachments([]string{tc.path}, tc.ws)
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
		got, err := Attachments([]string{path}, "")
		if err != nil {
			continue
		}
		if c := got[0].Content; c != "small" {
			t.Fatalf("accepted %d bytes that are not the small file", len(c))
		}
	}
}

// A file of the workspace is attached only as itself: a link that a
// model, a script or an earlier phase made there (to a host file, or
// through a directory) is refused, however the workspace itself was
// reached (here through a link of the operator's above it), and a file
// outside the workspace is the operator's and is read as named.
func TestAttachInTheWorkspaceFollowsNoLink(t *testing.T) {
	top := t.TempDir()
	ws := filepath.Join(top, "ws")
	testenv.Must(t, os.MkdirAll(filepath.Join(ws, "sub"), 0o755))
	host := filepath.Join(top, "host-secret.txt")
	testenv.Must(t, os.WriteFile(host, []byte("root:x:0:0"), 0o644))
	testenv.Must(t, os.WriteFile(filepath.Join(ws, "sub", "notes.md"), []byte("notes"), 0o644))
	testenv.Must(t, os.Symlink(host, filepath.Join(ws, "notes.md")))
	testenv.Must(t, os.Symlink(top, filepath.Join(ws, "up")))
	testenv.Must(t, os.Symlink("sub/notes.md", filepath.Join(ws, "inside.md")))
	operatorLink := filepath.Join(top, "via")
	testenv.Must(t, os.Symlink(ws, operatorLink))
	for _, tc := range []struct {
		name, path, want string
	}{
		{"a link to a host file", filepath.Join(ws, "notes.md"), "goes through a symbolic link"},
		{"through a linked directory", filepath.Join(ws, "up", "host-secret.txt"), "goes through a symbolic link"},
		{"a link inside the workspace", filepath.Join(ws, "inside.md"), "goes through a symbolic link"},
		{"through the operator's link to the workspace", filepath.Join(operatorLink, "notes.md"), "goes through a symbolic link"},
		{"a file", filepath.Join(operatorLink, "sub", "notes.md"), ""},
		{"a host file by its own path", host, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Attachments([]string{tc.path}, ws)
			if tc.want == "" {
				if err != nil || len(got) != 1 {
					t.Fatalf("Attachments = %+v, %v", got, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "root:x") {
				t.Fatalf("the host file reached the error: %v", err)
			}
		})
	}
}

// Beneath resolves a path from the top and stops at the workspace: links
// above it are the operator's and are followed, links below it are kept
// as written for the open beneath the workspace to refuse.
func TestBeneathStopsAtTheWorkspace(t *testing.T) {
	top := t.TempDir()
	ws := filepath.Join(top, "ws")
	testenv.Must(t, os.MkdirAll(filepath.Join(ws, "real"), 0o755))
	testenv.Must(t, os.Symlink(ws, filepath.Join(top, "to-ws")))                        // the operator's
	testenv.Must(t, os.Symlink(filepath.Join(ws, "sub"), filepath.Join(top, "to-sub"))) // the operator's, into the workspace
	testenv.Must(t, os.Symlink(top, filepath.Join(ws, "sub")))                          // a model's, out of it
	testenv.Must(t, os.Symlink(".", filepath.Join(ws, "loop")))                         // a model's, back into it
	testenv.Must(t, os.Symlink("ws/../ws/real", filepath.Join(top, "rel-to-real")))     // the operator's, relative
	for _, tc := range []struct {
		path, rel string
		ok        bool
	}{
		{filepath.Join(ws, "real", "f"), "real/f", true},
		{ws, ".", true},
		{filepath.Join(top, "to-ws", "real", "f"), "real/f", true},
		{filepath.Join(top, "to-sub", "secret"), "sub/secret", true},
		{filepath.Join(ws, "loop", "real", "f"), "loop/real/f", true},
		{filepath.Join(ws, "sub", "host.txt"), "sub/host.txt", true},
		{filepath.Join(top, "rel-to-real", "f"), "real/f", true},
		{filepath.Join(top, "elsewhere"), "", false},
		{filepath.Join(ws, "..", "elsewhere"), "", false},
	} {
		rel, ok := Beneath(tc.path, ws)
		if rel != tc.rel || ok != tc.ok {
			t.Errorf("Beneath(%s) = %q, %v; want %q, %v", tc.path, rel, ok, tc.rel, tc.ok)
		}
	}
}
