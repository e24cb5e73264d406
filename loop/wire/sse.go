package wire

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// Event is one server-sent event: its type (the "event" field, "" when
// none) and its data lines joined by newlines. Data is the reader's
// buffer: it is valid only until the function it was handed to returns.
type Event struct {
	Type string
	Data []byte
}

// errDone ends a stream at [DONE] without an error.
var errDone = errors.New("done")

// maxEventLine bounds one line of a stream. The body is bounded as a
// whole by the caller's transport; this keeps one line from growing the
// reader's buffer without end inside that bound.
const maxEventLine = 64 << 20

// ReadEvents reads text/event-stream from r and hands each event to each.
// It follows the format's rules for what a reader needs of it: lines end
// in LF, CRLF or CR; a line starting with a colon is a comment; a field
// name is what precedes the first colon, and one space after the colon is
// dropped; "data" lines accumulate, joined by LF; a blank line dispatches
// the event; an event with no data is dropped; a stream that ends without
// a blank line drops the event it was building. id and retry are for
// reconnecting, which harness does not do (its retries are its own). A
// byte order mark before the first line is dropped.
func ReadEvents(r io.Reader, each func(Event) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxEventLine)
	sc.Split(scanLines)
	var (
		typ     string
		data    []byte
		hasData bool
	)
	first := true
	for sc.Scan() {
		line := sc.Bytes()
		if first {
			// The format allows one byte order mark before the first line.
			line, first = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf")), false
		}
		if len(line) == 0 {
			if hasData {
				ev := Event{Type: typ, Data: bytes.TrimSuffix(data, []byte("\n"))}
				if err := each(ev); err != nil {
					if err == errDone {
						return nil
					}
					return err
				}
			}
			typ, data, hasData = "", data[:0], false
			continue
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(name) {
		case "event":
			typ = string(value)
		case "data":
			data = append(data, value...)
			data = append(data, '\n')
			hasData = true
		}
	}
	return sc.Err()
}

// scanLines splits at LF, CRLF or a lone CR. A CR at the end of what has
// been read waits for the next byte, which may be its LF.
func scanLines(data []byte, atEOF bool) (int, []byte, error) {
	for i, c := range data {
		switch c {
		case '\n':
			return i + 1, data[:i], nil
		case '\r':
			if i+1 < len(data) {
				if data[i+1] == '\n' {
					return i + 2, data[:i], nil
				}
				return i + 1, data[:i], nil
			}
			if atEOF {
				return i + 1, data[:i], nil
			}
			return 0, nil, nil
		}
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}
