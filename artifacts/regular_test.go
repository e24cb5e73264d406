package artifacts

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestReadRegular: what is read is judged by what opening gave. A FIFO
// is refused without waiting for a writer, a link to a device and a
// directory are not regular files, and a file over the bound is refused
// with its size.
func TestReadRegular(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	const max = 16
	for _, tc := range []struct {
		name, path string
		want       []byte
		notRegular bool
		tooLarge   int64 // the size TooLargeError reports; 0: not too large
	}{
		{name: "fifo", path: fifo, notRegular: true},
		{name: "device through a link", path: zero, notRegular: true},
		{name: "directory", path: dir, notRegular: true},
		{name: "over the bound", path: write("big", bytes.Repeat([]byte("x"), max+1)), tooLarge: max + 1},
		{name: "at the bound", path: write("full", bytes.Repeat([]byte("y"), max)), want: bytes.Repeat([]byte("y"), max)},
		{name: "empty", path: write("empty", nil), want: []byte{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadRegular(tc.path, max)
			var tl *TooLargeError
			switch {
			case tc.notRegular:
				if !errors.Is(err, ErrNotRegular) {
					t.Fatalf("err = %v, want ErrNotRegular", err)
				}
			case tc.tooLarge != 0:
				if !errors.As(err, &tl) || tl.Size != tc.tooLarge || tl.Max != max {
					t.Fatalf("err = %v, want TooLargeError{%d, %d}", err, tc.tooLarge, max)
				}
			default:
				if err != nil || !bytes.Equal(got, tc.want) {
					t.Fatalf("ReadRegular = %q, %v; want %q", got, err, tc.want)
				}
			}
		})
	}
	if _, err := ReadRegular(filepath.Join(dir, "missing"), max); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v, want ErrNotExist", err)
	}
}

// TestReadFileAtMost: an operator's file may be a pipe (a shell's
// <(command)); what never ends or is over the bound fails instead of
// being cut short or filling memory.
func TestReadFileAtMost(t *testing.T) {
	dir := t.TempDir()
	const max = 16
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	go func() {
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		w.Write([]byte("from a pipe"))
		w.Close()
	}()
	if got, err := ReadFileAtMost(fifo, max); err != nil || string(got) != "from a pipe" {
		t.Errorf("pipe: %q, %v", got, err)
	}
	var tl *TooLargeError
	if _, err := ReadFileAtMost("/dev/zero", max); !errors.As(err, &tl) || tl.Size != -1 || tl.Max != max {
		t.Errorf("/dev/zero: %v, want TooLargeError{-1, %d}", err, max)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, bytes.Repeat([]byte("x"), max+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFileAtMost(big, max); !errors.As(err, &tl) {
		t.Errorf("over the bound: %v", err)
	}
	if _, err := ReadFileAtMost(dir, max); err == nil {
		t.Error("a directory was read")
	}
	if got, err := ReadAtMost(bytes.NewReader(bytes.Repeat([]byte("y"), max)), max); err != nil || len(got) != max {
		t.Errorf("at the bound: %d bytes, %v", len(got), err)
	}
}

// The journal's own name is opened without following a link: a line
// appended through one would land wherever it leads.
func TestOpenJournalRefusesLinks(t *testing.T) {
	cases := []struct {
		name   string
		setup  func(t *testing.T, p, outside string)
		target string // what the outside path must still hold ("": absent)
	}{
		{"dangling link", func(t *testing.T, p, outside string) {
			mustSymlink(t, outside, p)
		}, ""},
		{"link to a journal", func(t *testing.T, p, outside string) {
			if err := os.WriteFile(outside, []byte("{}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			mustSymlink(t, outside, p)
		}, "{}\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, outside := filepath.Join(t.TempDir(), "journal.jsonl"), filepath.Join(t.TempDir(), "elsewhere")
			tc.setup(t, p, outside)
			j, err := OpenJournal(p, 1)
			if err == nil {
				j.Append("x", nil)
				j.Close()
			}
			if !errors.Is(err, ErrOutsideDir) {
				t.Fatalf("OpenJournal: %v, want ErrOutsideDir", err)
			}
			got, err := os.ReadFile(outside)
			switch {
			case tc.target == "" && !errors.Is(err, os.ErrNotExist):
				t.Fatalf("outside path: %q, %v; want none", got, err)
			case tc.target != "" && string(got) != tc.target:
				t.Fatalf("outside file is %q, want %q", got, tc.target)
			}
		})
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}
