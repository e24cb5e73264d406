package rundir

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/outcome"
)

func journalFile(t *testing.T, content string, extra int64) *os.File {
	t.Helper()
	p := filepath.Join(t.TempDir(), "journal.jsonl")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if extra > 0 {
		// A sparse tail: the size of a huge line without its disk.
		if err := os.Truncate(p, int64(len(content))+extra); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

const twoLines = `{"seq":1,"time":"2026-11-23T00:00:00Z","type":"run.created","data":{}}` + "\n" +
	`{"seq":2,"time":"2026-11-23T00:00:00Z","type":"run.finished","data":{}}` + "\n"

func TestReadJournalTails(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content string
		extra   int64
		status  string
		torn    int
		err     string
	}{
		{"ended, whole", twoLines, 0, "succeeded", 0, ""},
		{"crashed, torn", twoLines + `{"seq":3,"ty`, 0, outcome.StatusRunning, 12, ""},
		{"ended, bytes after the end", twoLines + "junk", 0, "succeeded", 0, "bytes follow the journal's last line"},
		{"ended, a 2 GiB tail", twoLines, 2 << 30, "failed", 0, "bytes follow the journal's last line"},
		// The size told is what was scanned without a newline (the bound
		// and one 64 KiB read), never the whole file's, which counts the
		// lines before the tail.
		{"crashed, a 2 GiB tail", twoLines, 2 << 30, outcome.StatusRunning, 0, "a line of 1073807360 bytes or more, longer than any harness writes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := readJournal(journalFile(t, tc.content, tc.extra), tc.status)
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
			case err != nil:
				t.Fatal(err)
			case len(c.Events) != 2 || c.TornBytes != tc.torn || c.TornTail != (tc.torn > 0):
				t.Errorf("%d events, torn %d (%v), want 2 and %d", len(c.Events), c.TornBytes, c.TornTail, tc.torn)
			}
		})
	}
}

// A line longer than the bound fails the read without being held whole.
func TestLineBound(t *testing.T) {
	r := &lineBound{r: io.LimitReader(zeros{}, maxJournalLine+10)}
	_, err := io.Copy(io.Discard, r)
	if !errors.Is(err, artifacts.ErrJournalCorrupt) {
		t.Fatalf("err = %v", err)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func TestLastNewlineIn(t *testing.T) {
	for _, s := range []string{"", "a", "\n", "a\n", "\na", "a\nb\nc", "\n\n\n", strings.Repeat("x", 100) + "\n" + strings.Repeat("y", 70000)} {
		if got, want := lastNewlineIn([]byte(s)), bytes.LastIndexByte([]byte(s), '\n'); got != want {
			t.Errorf("lastNewlineIn(%.20q) = %d, want %d", s, got, want)
		}
	}
}

// FuzzLastNewlineIn: the forward scan finds the same newline as
// bytes.LastIndexByte for every input, or a torn tail is miscounted.
func FuzzLastNewlineIn(f *testing.F) {
	for _, s := range []string{"", "\n", "a\n", "\na", "\n\n", "a\nb\nc", "\r\n\x00\n\xff"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := lastNewlineIn(b), bytes.LastIndexByte(b, '\n'); got != want {
			t.Fatalf("lastNewlineIn(%q) = %d, want %d", b, got, want)
		}
	})
}

// The backward scan reads the file in chunks: a newline on either side of
// a chunk's edge, or none at all, is found where bytes.LastIndexByte
// finds it in the whole file.
func TestLastNewlineChunkEdges(t *testing.T) {
	const chunk = 64 << 10
	for _, tc := range []struct {
		name string
		size int
		nl   []int
	}{
		{"empty", 0, nil},
		{"no newline, one chunk", chunk, nil},
		{"no newline, past a chunk", chunk + 1, nil},
		{"newline first byte of a full chunk", chunk, []int{0}},
		{"newline last byte", chunk + 1, []int{chunk}},
		{"newline just before the last chunk", chunk + 5, []int{4}},
		{"newline first byte of the last chunk", chunk + 5, []int{5}},
		{"newline in the second chunk back", 3*chunk + 7, []int{1, chunk}},
		{"newlines on both sides of an edge", 2*chunk + 3, []int{2, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := bytes.Repeat([]byte{'x'}, tc.size)
			for _, i := range tc.nl {
				b[i] = '\n'
			}
			f := journalFile(t, string(b), 0)
			got, err := lastNewline(f, int64(tc.size))
			if err != nil {
				t.Fatal(err)
			}
			if want := int64(bytes.LastIndexByte(b, '\n') + 1); got != want {
				t.Errorf("lastNewline = %d, want %d", got, want)
			}
		})
	}
}
