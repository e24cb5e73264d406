package loop

import (
	"bytes"
	"encoding/json"
)

// A recorded request is the whole conversation so far, so a cassette of n
// turns holds O(n²) bytes of requests, and encoding/json scans a value it
// keeps raw twice and copies it. cutRequest lets OpenCassette skip that:
// it walks the line's top-level object just far enough to find the
// "request" member, so the rest of the line (envelope, key, response) is
// decoded, and validated, on its own, while the request stays the bytes of
// the line. The request is not validated here; it is decoded only to
// explain a mismatch, and a broken one is reported then.

// cutRequest returns line with the value of its top-level "request" member
// replaced by null, and where that value lies in line. ok is false when the line is not an
// object this walk understands, when no member or more than one could be
// the request (encoding/json matches keys without regard to case, and a
// key may be escaped), or when the line is malformed: the caller then
// decodes the whole line as before, which also gives the precise error.
func cutRequest(line []byte) (rest []byte, start, end int, ok bool) {
	i := skipSpace(line, 0)
	if i >= len(line) || line[i] != '{' {
		return nil, 0, 0, false
	}
	start, end = -1, -1
	for i++; ; {
		i = skipSpace(line, i)
		if i >= len(line) || line[i] != '"' {
			return nil, 0, 0, false
		}
		j := endOfString(line, i)
		if j < 0 {
			return nil, 0, 0, false
		}
		key := line[i+1 : j-1]
		if i = skipSpace(line, j); i >= len(line) || line[i] != ':' {
			return nil, 0, 0, false
		}
		vs := skipSpace(line, i+1)
		if i = skipValue(line, vs); i < 0 {
			return nil, 0, 0, false
		}
		switch {
		case bytes.Equal(key, []byte("request")):
			if start >= 0 {
				return nil, 0, 0, false
			}
			start, end = vs, i
		case !plainKey(key) || bytes.EqualFold(key, []byte("request")):
			return nil, 0, 0, false
		}
		if i = skipSpace(line, i); i >= len(line) {
			return nil, 0, 0, false
		}
		if line[i] == ',' {
			i++
			continue
		}
		if line[i] != '}' || skipSpace(line, i+1) != len(line) {
			return nil, 0, 0, false
		}
		break
	}
	if start < 0 {
		return nil, 0, 0, false
	}
	rest = make([]byte, 0, len(line)-(end-start)+len("null"))
	rest = append(rest, line[:start]...)
	rest = append(rest, "null"...)
	rest = append(rest, line[end:]...)
	return rest, start, end, true
}

// plainKey is a key that means only itself to encoding/json: printable
// ASCII without escapes.
func plainKey(k []byte) bool {
	for _, c := range k {
		if c < 0x20 || c >= 0x7f || c == '\\' {
			return false
		}
	}
	return true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// endOfString returns the index just after the string that opens at
// b[i], or -1 if it does not close.
func endOfString(b []byte, i int) int {
	for i++; ; {
		q := bytes.IndexByte(b[i:], '"')
		if q < 0 {
			return -1
		}
		i += q
		bs := 0
		for k := i - 1; k >= 0 && b[k] == '\\'; k-- {
			bs++
		}
		i++
		if bs%2 == 0 {
			return i
		}
	}
}

// skipValue returns the index just after the value that starts at b[i],
// or -1. Brackets are counted, not matched by kind: a value it accepts
// that is not JSON is caught by the decoder (outside the request) or when
// the request is decoded.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return endOfString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				if i = endOfString(b, i); i < 0 {
					return -1
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	default:
		s := i
		for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\n' && b[i] != '\r' {
			i++
		}
		if i == s {
			return -1
		}
		return i
	}
}

// decodeStored decodes one cassette line into its envelope and stored
// entry. When the request was cut out, span is where it lies in line and
// e.Request is nil; otherwise span is zero and e.Request is the request as
// encoding/json keeps it raw (a copy).
func decodeStored(line []byte, e *storedLine) (span [2]int, err error) {
	if rest, start, end, ok := cutRequest(line); ok {
		if err := json.Unmarshal(rest, e); err == nil {
			e.Request = nil
			return [2]int{start, end}, nil
		}
		*e = storedLine{}
	}
	return [2]int{}, json.Unmarshal(line, e)
}
