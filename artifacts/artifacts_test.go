package artifacts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/testenv"
)

type record struct {
	Envelope
	Name string `json:"name"`
}

func TestWriteJSONIsAtomicAndLeavesNothingBehind(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.json")
	if err := WriteJSON(p, record{NewEnvelope("harness.test", 1), "one"}); err != nil {
		t.Fatal(err)
	}
	var got record
	if err := ReadJSON(p, "harness.test", 1, &got); err != nil || got.Name != "one" {
		t.Fatalf("ReadJSON = %+v, %v", got, err)
	}
	// A value that cannot be encoded leaves the old file untouched.
	if err := WriteJSON(p, map[string]any{"f": func() {}}); err == nil {
		t.Fatal("encoding a func succeeded")
	}
	if err := ReadJSON(p, "harness.test", 1, &got); err != nil || got.Name != "one" {
		t.Fatalf("old file damaged: %+v, %v", got, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

// An artifact larger than writebackChunk goes to disk in chunks before
// its fsync; what lands must still be exactly what was written, and a
// failure after some chunks must still leave the old file alone.
func TestWriteStreamLargeArtifact(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "big.json")
	want := make([]byte, 4*writebackChunk+12345)
	for i := range want {
		want[i] = byte(i*7 + i>>13)
	}
	// Writes of uneven sizes, so chunk boundaries fall inside them.
	write := func(w io.Writer, upto int) error {
		for off, step := 0, 1; off < upto; off, step = off+step, step*3%100003+1 {
			if _, err := w.Write(want[off:min(off+step, upto)]); err != nil {
				return err
			}
		}
		return nil
	}
	if err := WriteStream(p, 0o644, func(w io.Writer) error { return write(w, len(want)) }); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read back %d bytes (err %v), want the %d written", len(got), err, len(want))
	}
	failed := errors.New("encoder failed")
	err := WriteStream(p, 0o644, func(w io.Writer) error {
		if err := write(w, 3*writebackChunk); err != nil {
			return err
		}
		return failed
	})
	if !errors.Is(err, failed) {
		t.Fatalf("WriteStream = %v, want the encoder's error", err)
	}
	if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("old file damaged by a failed write: %d bytes, %v", len(got), err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

func TestReadJSONChecksTheEnvelope(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, content, want string
	}{
		{"other type", `{"type":"harness.other","version":1}`, `type is "harness.other"`},
		{"newer version", `{"type":"harness.test","version":3}`, "version 3 is not supported"},
		{"no envelope", `{"name":"x"}`, `type is ""`},
		{"not JSON", `{`, "unexpected end"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			os.WriteFile(p, []byte(tc.content), 0o644)
			var r record
			err := ReadJSON(p, "harness.test", 2, &r)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestDigest(t *testing.T) {
	// Reference values from the b3sum command.
	if got := DigestString(""); got != "blake3:af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262" {
		t.Errorf("digest of empty = %s", got)
	}
	d, n, err := DigestReader(strings.NewReader("abc"))
	if err != nil || n != 3 || d != DigestString("abc") || !d.Valid() {
		t.Errorf("DigestReader = %s %d %v", d, n, err)
	}
	for _, bad := range []Digest{"", "sha256:00", "blake3:xyz", Digest("blake3:" + strings.Repeat("0", 63))} {
		if bad.Valid() {
			t.Errorf("%q is valid", bad)
		}
	}
	// Length-prefixed fields keep ("ab","c") apart from ("a","bc").
	h1, h2 := NewHasher(), NewHasher()
	h1.WriteField("ab")
	h1.WriteField("c")
	h2.WriteField("a")
	h2.WriteField("bc")
	if h1.Digest() == h2.Digest() {
		t.Error("field boundaries do not change the digest")
	}
}

// The Hasher's buffering is invisible: whatever the field sizes, and
// with raw writes between them, the digest is blake3 of "len:field"...
func TestHasherBufferingIsInvisible(t *testing.T) {
	big := strings.Repeat("x", 40<<10)
	for name, fields := range map[string][]string{
		"none":  nil,
		"small": {"a", "", "bc"},
		"many":  slices.Repeat([]string{"0123456789abcdef"}, 3000),
		"big":   {"a", big, "b"},
	} {
		t.Run(name, func(t *testing.T) {
			h := NewHasher()
			var want []byte
			for i, f := range fields {
				h.WriteField(f)
				want = fmt.Appendf(want, "%d:%s", len(f), f)
				if i == 1 {
					h.Write([]byte("raw"))
					want = append(want, "raw"...)
				}
			}
			if got := h.Digest(); got != DigestBytes(want) || h.Digest() != got {
				t.Fatalf("Digest = %s, want %s", got, DigestBytes(want))
			}
		})
	}
}

func TestJournalAppendAndRead(t *testing.T) {
	p := filepath.Join(t.TempDir(), "journal.jsonl")
	j, err := OpenJournal(p, 1)
	if err != nil {
		t.Fatal(err)
	}
	j.SetClock(func() time.Time { return time.Unix(0, 0) })
	var teed []string
	j.Tee(func(line []byte) { teed = append(teed, string(line)) })
	for i := range 3 {
		if _, err := j.Append("test.event", map[string]int{"i": i}); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	// Reopening continues the sequence.
	j, _ = OpenJournal(p, 4)
	j.Append("test.more", nil)
	j.Close()
	f, _ := os.Open(p)
	defer f.Close()
	c, err := ReadJournal(f)
	if err != nil || c.TornTail || len(c.Events) != 4 {
		t.Fatalf("ReadJournal = %+v, %v", c, err)
	}
	for i, ev := range c.Events {
		if ev.Seq != int64(i+1) {
			t.Errorf("event %d has seq %d", i, ev.Seq)
		}
	}
	if len(teed) != 3 || !strings.Contains(teed[0], `"type":"test.event"`) {
		t.Errorf("tee got %v", teed)
	}
	fi, _ := os.Stat(p)
	if c.ValidSize != fi.Size() {
		t.Errorf("ValidSize %d, file %d", c.ValidSize, fi.Size())
	}
}

func TestReadJournalTornAndCorrupt(t *testing.T) {
	ok := `{"seq":1,"time":"2026-01-01T00:00:00Z","type":"a"}` + "\n"
	for _, tc := range []struct {
		name    string
		in      string
		events  int
		torn    bool
		corrupt bool
	}{
		{"empty", "", 0, false, false},
		{"clean", ok + ok, 2, false, false},
		{"torn partial JSON", ok + `{"seq":2,"ti`, 1, true, false},
		{"complete JSON without newline", ok + strings.TrimSuffix(ok, "\n"), 1, true, false},
		{"garbage last line with newline", ok + "garbage\n", 1, false, true}, // complete: not a crash
		{"corrupt middle", ok + "garbage\n" + ok, 1, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ReadJournal(strings.NewReader(tc.in))
			if tc.corrupt {
				if !errors.Is(err, ErrJournalCorrupt) || !strings.Contains(err.Error(), "line 2") {
					t.Fatalf("err = %v, want ErrJournalCorrupt at line 2", err)
				}
				return
			}
			if err != nil || len(c.Events) != tc.events || c.TornTail != tc.torn {
				t.Fatalf("got %d events torn=%v err=%v", len(c.Events), c.TornTail, err)
			}
			if int(c.ValidSize)+c.TornBytes != len(tc.in) {
				t.Errorf("ValidSize %d + TornBytes %d != %d", c.ValidSize, c.TornBytes, len(tc.in))
			}
		})
	}
}

func TestJournalConcurrentAppends(t *testing.T) {
	j, err := OpenJournal(filepath.Join(t.TempDir(), "j.jsonl"), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var wg sync.WaitGroup
	seen := make(chan int64, 40)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10 {
				ev, err := j.Append("c", fmt.Sprint(g, i))
				if err != nil {
					t.Error(err)
					return
				}
				seen <- ev.Seq
			}
		}()
	}
	wg.Wait()
	close(seen)
	got := map[int64]bool{}
	for s := range seen {
		if got[s] {
			t.Fatalf("seq %d assigned twice", s)
		}
		got[s] = true
	}
	for s := int64(1); s <= 40; s++ {
		if !got[s] {
			t.Errorf("seq %d missing", s)
		}
	}
}

// FuzzReadJournal: any input either fails or yields events whose complete
// lines, re-read alone, give the same events and no torn tail.
func FuzzReadJournal(f *testing.F) {
	f.Add([]byte(`{"seq":1,"time":"2026-01-01T00:00:00Z","type":"a"}` + "\n"))
	f.Add([]byte(`{"seq":1,"type":"a"}` + "\n" + `{"seq":2,`))
	f.Add([]byte("x\n{}\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := ReadJournal(bytes.NewReader(in))
		if err != nil {
			return
		}
		if c.ValidSize > int64(len(in)) {
			t.Fatalf("ValidSize %d > input %d", c.ValidSize, len(in))
		}
		again, err := ReadJournal(bytes.NewReader(in[:c.ValidSize]))
		if err != nil || again.TornTail || len(again.Events) != len(c.Events) {
			t.Fatalf("re-reading the valid prefix: %d events torn=%v err=%v, want %d", len(again.Events), again.TornTail, err, len(c.Events))
		}
	})
}

// A deferred event is in the file at once, in call order and chained,
// but the tee (which promises durable lines) sees it only when a later
// Append, a Sync or Close makes it durable.
func TestJournalDeferredAppends(t *testing.T) {
	p := filepath.Join(t.TempDir(), "journal.jsonl")
	j, err := OpenJournal(p, 1)
	if err != nil {
		t.Fatal(err)
	}
	var teed []string
	j.Tee(func(line []byte) {
		var ev Event
		json.Unmarshal(line, &ev)
		teed = append(teed, ev.Type)
	})
	lines := func() int {
		b, _ := os.ReadFile(p)
		return strings.Count(string(b), "\n")
	}
	j.AppendDeferred("a", nil)
	j.AppendDeferred("b", nil)
	if lines() != 2 || len(teed) != 0 {
		t.Fatalf("after two deferred appends: %d lines, tee %v", lines(), teed)
	}
	j.Append("c", nil)
	if got := strings.Join(teed, ","); got != "a,b,c" {
		t.Fatalf("after a durable append the tee saw %q, want a,b,c", got)
	}
	j.AppendDeferred("d", nil)
	testenv.Must(t, j.Sync())
	j.AppendDeferred("e", nil)
	testenv.Must(t, j.Close())
	if got := strings.Join(teed, ","); got != "a,b,c,d,e" {
		t.Fatalf("after Sync and Close the tee saw %q", got)
	}
	f, _ := os.Open(p)
	defer f.Close()
	c, err := ReadJournal(f)
	testenv.Must(t, err)
	if _, err := VerifyChain(c.Events, nil); err != nil || len(c.Events) != 5 {
		t.Fatalf("chain of %d events: %v", len(c.Events), err)
	}
}
