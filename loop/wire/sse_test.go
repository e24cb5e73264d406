package wire

import (
	"errors"
	"strings"
	"testing"
	"testing/iotest"
)

func collect(t *testing.T, stream string) []Event {
	t.Helper()
	var got []Event
	err := ReadEvents(strings.NewReader(stream), func(ev Event) error {
		got = append(got, Event{Type: ev.Type, Data: append([]byte(nil), ev.Data...)})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestReadEvents(t *testing.T) {
	for _, tc := range []struct {
		name, stream string
		want         []string // type|data per event
	}{
		{"one event", "data: {\"a\":1}\n\n", []string{`|{"a":1}`}},
		{"typed events", "event: response.completed\ndata: x\n\nevent: error\ndata: y\n\n", []string{"response.completed|x", "error|y"}},
		{"data lines joined", "data: a\ndata: b\n\n", []string{"|a\nb"}},
		{"CRLF", "data: a\r\n\r\ndata: b\r\n\r\n", []string{"|a", "|b"}},
		{"lone CR", "data: a\r\rdata: b\r\r", []string{"|a", "|b"}},
		{"comments and unknown fields", ": keep-alive\nid: 7\nretry: 10\ndata: a\n\n", []string{"|a"}},
		{"no space after the colon", "data:a\n\n", []string{"|a"}},
		{"only one space dropped", "data:  a\n\n", []string{"| a"}},
		{"a line without a colon is a field with no value", "data\n\n", []string{"|"}},
		{"an event without data is dropped", "event: ping\n\ndata: a\n\n", []string{"|a"}},
		{"the type does not leak into the next event", "event: x\n\ndata: a\n\n", []string{"|a"}},
		{"an unfinished event is dropped", "data: a\n\ndata: b", []string{"|a"}},
		{"blank lines between events", "\n\n\ndata: a\n\n\n\n", []string{"|a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := collect(t, tc.stream)
			var s []string
			for _, ev := range got {
				s = append(s, ev.Type+"|"+string(ev.Data))
			}
			if strings.Join(s, "§") != strings.Join(tc.want, "§") {
				t.Errorf("events %q, want %q", s, tc.want)
			}
		})
	}
}

// TestReadEventsByteByByte: the reader does not depend on how reads split
// the stream, a CR at the end of one read included.
func TestReadEventsByteByByte(t *testing.T) {
	stream := "data: a\r\n\r\nevent: e\rdata: b\r\r"
	var got []string
	err := ReadEvents(iotest.OneByteReader(strings.NewReader(stream)), func(ev Event) error {
		got = append(got, ev.Type+"|"+string(ev.Data))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "§") != "|a§e|b" {
		t.Errorf("events %q", got)
	}
}

func TestReadEventsStopsWhereToldTo(t *testing.T) {
	stop := errors.New("stop")
	n := 0
	err := ReadEvents(strings.NewReader("data: a\n\ndata: b\n\n"), func(Event) error { n++; return stop })
	if err != stop || n != 1 {
		t.Errorf("err %v after %d events, want stop after 1", err, n)
	}
	n = 0
	err = ReadEvents(strings.NewReader("data: a\n\ndata: [DONE]\n\ndata: b\n\n"), func(ev Event) error {
		n++
		if string(ev.Data) == "[DONE]" {
			return errDone
		}
		return nil
	})
	if err != nil || n != 2 {
		t.Errorf("err %v after %d events, want nil after 2", err, n)
	}
}

// TestReadEventsBoundsALine: a line longer than the bound is an error,
// not a buffer that grows with it.
func TestReadEventsBoundsALine(t *testing.T) {
	r := strings.NewReader("data: " + strings.Repeat("x", maxEventLine+1))
	if err := ReadEvents(r, func(Event) error { return nil }); err == nil {
		t.Error("a line over the bound was read")
	}
}

// FuzzReadEvents: any bytes are read without a panic, and splitting the
// same bytes into one-byte reads gives the same events.
func FuzzReadEvents(f *testing.F) {
	for _, s := range []string{"data: a\n\n", "event: x\r\ndata: {}\r\n\r\n", ": c\rdata\r\r", "data: a\ndata: b\n\ndata: [DONE]\n\n", "\r\n\r"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		read := func(r interface{ Read([]byte) (int, error) }) []string {
			var got []string
			ReadEvents(r, func(ev Event) error {
				got = append(got, ev.Type+"\x00"+string(ev.Data))
				return nil
			})
			return got
		}
		whole := read(strings.NewReader(string(b)))
		bytewise := read(iotest.OneByteReader(strings.NewReader(string(b))))
		if strings.Join(whole, "\x01") != strings.Join(bytewise, "\x01") {
			t.Fatalf("whole %q, byte by byte %q", whole, bytewise)
		}
	})
}
