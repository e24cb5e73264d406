package wire

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzReadEventsLineEndings: whatever a server sends, the reader does not panic,
// and the same events come out whether lines end in LF, CRLF or CR.
func FuzzReadEventsLineEndings(f *testing.F) {
	f.Add("data: {\"a\":1}\n\ndata: [DONE]\n\n")
	f.Add(": c\nevent: x\ndata: a\ndata: b\n\n")
	f.Add("data:\n\ndata: x\r\n\r")
	f.Fuzz(func(t *testing.T, s string) {
		collect := func(text string) []string {
			var out []string
			ReadEvents(strings.NewReader(text), func(ev Event) error {
				out = append(out, ev.Type+"\x00"+string(bytes.Clone(ev.Data)))
				return nil
			})
			return out
		}
		if strings.ContainsAny(s, "\r") {
			collect(s)
			return
		}
		lf := collect(s)
		for _, nl := range []string{"\r\n", "\r"} {
			if got := collect(strings.ReplaceAll(s, "\n", nl)); strings.Join(got, "\x01") != strings.Join(lf, "\x01") {
				t.Fatalf("with %q line ends: %q; with LF: %q", nl, got, lf)
			}
		}
	})
}
