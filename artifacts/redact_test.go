package artifacts

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

const testKey = "sk-live-0123456789abcdef"

// TestRedactorEscapedSpellings: the key is redacted however JSON spells
// it, at any depth of JSON-in-a-JSON-string, and text that only resembles
// it is left alone.
func TestRedactorEscapedSpellings(t *testing.T) {
	r := NewRedactor(testKey)
	for _, tc := range []struct {
		name, in, want string
	}{
		{"raw", `x sk-live-0123456789abcdef y`, `x [redacted] y`},
		{"one escape", `"sk-live-0123456789abcde\u0066"`, `"[redacted]"`},
		{"upper hex", `"\u0073k-live-0123456789abcde\u0046"`, `"\u0073k-live-0123456789abcde\u0046"`},
		{"upper hex digits", `"sk-live-0123456789abcd\u0065\u0066"`, `"[redacted]"`},
		{"hex case", `"sk-live-0123456789\u0061\u0062cdef"`, `"[redacted]"`},
		{"nested", `{"arguments":"{\"content\": \"sk-live-0123456789abcde\\u0066\"}"}`, `{"arguments":"{\"content\": \"[redacted]\"}"}`},
		{"twice nested", `"\\\\u0073k-live-0123456789abcdef"`, `"[redacted]"`},
		{"every char", `"` + escapeAll(testKey) + `"`, `"[redacted]"`},
		{"other text", `"sk-live-0123456789abcde\u0067"`, `"sk-live-0123456789abcde\u0067"`},
		{"no backslash", `sk-live-0123456789abcdeg`, `sk-live-0123456789abcdeg`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := r.String(tc.in); got != tc.want {
				t.Errorf("String(%s) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
}

func escapeAll(s string) string {
	var b strings.Builder
	for _, c := range s {
		fmt.Fprintf(&b, `\u%04x`, c)
	}
	return b.String()
}

// FuzzRedactorJSONSpellings: whatever characters of the key a JSON string
// escapes, and however many times the document is put in a JSON string,
// decoding what the redactor wrote never gives the key back.
func FuzzRedactorJSONSpellings(f *testing.F) {
	f.Add(uint32(1), uint8(1), "pre", "post")
	f.Add(uint32(0xffffff), uint8(3), "", "")
	f.Fuzz(func(t *testing.T, mask uint32, depth uint8, pre, post string) {
		r := NewRedactor(testKey)
		var b strings.Builder
		for i, c := range testKey {
			if mask&(1<<(i%32)) != 0 {
				fmt.Fprintf(&b, `\u%04x`, c)
			} else {
				b.WriteRune(c)
			}
		}
		pb, _ := json.Marshal(pre)
		qb, _ := json.Marshal(post)
		doc := string(pb[:len(pb)-1]) + b.String() + string(qb[1:])
		for range depth % 4 {
			q, _ := json.Marshal(doc)
			doc = string(q)
		}
		out := r.String(doc)
		for range depth%4 + 1 {
			var s string
			if err := json.Unmarshal([]byte(out), &s); err != nil {
				return
			}
			if strings.Contains(s, testKey) {
				t.Fatalf("key in %q after decoding %q", s, out)
			}
			out = s
		}
	})
}
