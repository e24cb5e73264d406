package skills

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The lister returns what os.ReadDir returns: names, order and types, for
// every kind of entry, over listings that take several getdents calls.
func TestDirListerMatchesReadDir(t *testing.T) {
	dir := t.TempDir()
	for i := range 600 { // long names: several 32 KiB batches
		name := fmt.Sprintf("%03d-%s", i, strings.Repeat("n", 120))
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	must(os.Symlink("sub", filepath.Join(dir, "link")))
	must(os.Symlink("missing", filepath.Join(dir, "dangling")))
	must(syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "é ü\tname"), nil, 0o644))
	l, err := net.Listen("unix", filepath.Join(dir, "sock"))
	must(err)
	defer l.Close()

	outside := t.TempDir()
	must(os.Symlink(outside, filepath.Join(dir, "away")))
	must(os.Symlink(filepath.Join(dir, "sub"), filepath.Join(dir, "absolute")))
	r, err := openScanRoot(dir)
	must(err)
	defer func() { r.fs.Close(); r.dir.Close() }()

	var lister dirLister
	for _, rel := range []string{".", "sub", "link"} {
		d := filepath.Join(dir, rel)
		want, err := os.ReadDir(d)
		must(err)
		got, err := lister.listBeneath(r, rel, d)
		must(err)
		if len(got) != len(want) {
			t.Fatalf("%s: %d entries, os.ReadDir has %d", d, len(got), len(want))
		}
		for i := range want {
			if got[i].Name() != want[i].Name() || got[i].Type() != want[i].Type() || got[i].IsDir() != want[i].IsDir() {
				t.Fatalf("%s entry %d: %q %v, os.ReadDir has %q %v", d, i, got[i].Name(), got[i].Type(), want[i].Name(), want[i].Type())
			}
		}
	}
	_, err = lister.listBeneath(r, "missing", filepath.Join(dir, "missing"))
	_, werr := os.ReadDir(filepath.Join(dir, "missing"))
	if err == nil || err.Error() != werr.Error() {
		t.Fatalf("listing a missing directory: %v, os.ReadDir says %v", err, werr)
	}
	if _, err := lister.listBeneath(r, "fifo", filepath.Join(dir, "fifo")); err == nil {
		t.Fatal("a FIFO was listed as a directory")
	}
	// Links that leave the root, or are absolute, are not listed through,
	// as the root's files are not read through them.
	for _, rel := range []string{"away", "absolute", "../" + filepath.Base(outside), outside} {
		if _, err := lister.listBeneath(r, rel, filepath.Join(dir, rel)); err == nil || !strings.Contains(err.Error(), "out of the skills root") {
			t.Errorf("%s: listed beneath the root (err %v)", rel, err)
		}
	}
}

// A record the kernel would never write (a length past the batch, or too
// short to hold its header) ends the batch instead of reading past it.
func FuzzAppendDirents(f *testing.F) {
	f.Add([]byte("\x01\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x18\x00\x08abcd\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, e := range appendDirents(nil, "/d", -1, b) {
			if e.Name() == "" || strings.ContainsRune(e.Name(), 0) {
				t.Fatalf("bad name %q", e.Name())
			}
		}
	})
}
