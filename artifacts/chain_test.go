package artifacts

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func writeJournal(t *testing.T, key []byte, n int) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "journal.jsonl")
	j, err := OpenJournal(p, 1)
	if err != nil {
		t.Fatal(err)
	}
	j.Continue("", key)
	for i := 0; i < n; i++ {
		if _, err := j.Append("step", map[string]int{"i": i}); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	return p
}

func readChain(t *testing.T, p string, key []byte) (Digest, error) {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := ReadJournal(f)
	if err != nil {
		return "", err
	}
	return VerifyChain(c.Events, key)
}

// TestChainCatchesTampering: every kind of edit to a journal breaks the
// chain at the line it touched, with and without a key.
func TestChainCatchesTampering(t *testing.T) {
	key := []byte("a run key of some length")
	for _, tc := range []struct {
		name   string
		key    []byte
		change func(lines [][]byte) [][]byte
		line   int // first bad line; 0 = intact
	}{
		{"intact", nil, func(l [][]byte) [][]byte { return l }, 0},
		{"intact, sealed", key, func(l [][]byte) [][]byte { return l }, 0},
		{"edited data", nil, func(l [][]byte) [][]byte { l[2] = bytes.Replace(l[2], []byte(`"i":2`), []byte(`"i":9`), 1); return l }, 4},
		{"removed line", nil, func(l [][]byte) [][]byte { return append(l[:1], l[2:]...) }, 2},
		{"swapped lines", nil, func(l [][]byte) [][]byte { l[1], l[2] = l[2], l[1]; return l }, 2},
		{"edited last line, sealed", key, func(l [][]byte) [][]byte { l[4] = bytes.Replace(l[4], []byte(`"i":4`), []byte(`"i":7`), 1); return l }, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeJournal(t, tc.key, 5)
			b, _ := os.ReadFile(p)
			lines := bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
			lines = tc.change(lines)
			os.WriteFile(p, append(bytes.Join(lines, []byte("\n")), '\n'), 0o644)
			_, err := readChain(t, p, tc.key)
			var ce *ChainError
			switch {
			case tc.line == 0 && err != nil:
				t.Fatalf("intact journal refused: %v", err)
			case tc.line != 0 && (!errors.As(err, &ce) || ce.Line != tc.line):
				t.Fatalf("got %v, want a chain error at line %d", err, tc.line)
			}
		})
	}
	// A sealed journal does not verify without its key's lines matching,
	// and an unsealed one fails when a key is expected.
	p := writeJournal(t, nil, 2)
	if _, err := readChain(t, p, key); err == nil {
		t.Error("an unsealed journal verified against a key")
	}
	p = writeJournal(t, key, 2)
	if _, err := readChain(t, p, []byte("another key entirely")); err == nil {
		t.Error("a sealed journal verified with the wrong key")
	}
}

// TestCompleteGarbageLastLineIsNotTorn: only a last line without its
// newline is a crash; a complete line that does not parse is damage.
func TestCompleteGarbageLastLineIsNotTorn(t *testing.T) {
	p := writeJournal(t, nil, 2)
	f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	f.Write([]byte("garbage\n"))
	f.Close()
	r, _ := os.Open(p)
	defer r.Close()
	if _, err := ReadJournal(r); !errors.Is(err, ErrJournalCorrupt) {
		t.Errorf("a complete garbage last line: %v, want ErrJournalCorrupt", err)
	}
}

// TestReadBeneathStaysInside: paths written in a run directory are not
// trusted to stay in it.
func TestReadBeneathStaysInside(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "run")
	os.MkdirAll(filepath.Join(dir, "tool-outputs"), 0o755)
	os.WriteFile(filepath.Join(base, "outside.json"), []byte(`{"secret":1}`), 0o644)
	os.WriteFile(filepath.Join(dir, "tool-outputs", "ok.json"), []byte(`{}`), 0o644)
	os.Symlink(filepath.Join(base, "outside.json"), filepath.Join(dir, "tool-outputs", "link.json"))
	os.Symlink(base, filepath.Join(dir, "children"))
	syscall.Mkfifo(filepath.Join(dir, "fifo.json"), 0o644)
	if _, err := ReadBeneath(dir, "tool-outputs/ok.json"); err != nil {
		t.Errorf("a file inside: %v", err)
	}
	for _, rel := range []string{"../outside.json", "tool-outputs/../../outside.json", "/etc/passwd", "tool-outputs/link.json", "children/outside.json"} {
		if _, err := ReadBeneath(dir, rel); !errors.Is(err, ErrOutsideDir) {
			t.Errorf("%s: %v, want ErrOutsideDir", rel, err)
		}
	}
	if _, err := ReadBeneath(dir, "fifo.json"); err == nil {
		t.Error("a FIFO was read")
	}
}

// WriteBeneath restores a file into a run directory that may have been
// tampered with: it must neither leave the directory nor write through a
// link, and it replaces a link at the destination instead of following it.
func TestWriteBeneathStaysInside(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "run")
	os.MkdirAll(filepath.Join(dir, "tool-outputs"), 0o755)
	outside := filepath.Join(base, "outside.json")
	os.WriteFile(outside, []byte(`{"keep":1}`), 0o644)
	os.Symlink(base, filepath.Join(dir, "children"))
	os.Symlink(outside, filepath.Join(dir, "tool-outputs", "link.json"))
	if err := WriteBeneath(dir, "tool-outputs/new.json", []byte(`{"a":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteBeneath(dir, "tool-outputs/link.json", []byte(`{"b":2}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(outside); string(got) != `{"keep":1}` {
		t.Errorf("the write went through a link: outside is now %s", got)
	}
	if got, err := ReadBeneath(dir, "tool-outputs/link.json"); err != nil || string(got) != `{"b":2}` {
		t.Errorf("link.json was not replaced by a file: %s, %v", got, err)
	}
	for _, rel := range []string{"../outside.json", "tool-outputs/../../outside.json", "/tmp/x.json", "children/outside.json"} {
		if err := WriteBeneath(dir, rel, []byte(`{}`), 0o644); !errors.Is(err, ErrOutsideDir) {
			t.Errorf("%s: %v, want ErrOutsideDir", rel, err)
		}
	}
	for _, rel := range []string{"tool-outputs/", "tool-outputs/.."} {
		if err := WriteBeneath(dir, rel, []byte(`{}`), 0o644); err == nil {
			t.Errorf("%s was written", rel)
		}
	}
	if got, _ := os.ReadFile(outside); string(got) != `{"keep":1}` {
		t.Errorf("outside changed: %s", got)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "tool-outputs"))
	if len(entries) != 2 {
		t.Errorf("tool-outputs holds %d entries, want 2 (no temporary file left)", len(entries))
	}
}
