package termsafe

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestEscape(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"plain", `{"path": "a.txt"}`, `{"path": "a.txt"}`},
		{"backslash kept", `a\nb`, `a\nb`},
		{"carriage return", "w1\rbenign", `w1\rbenign`},
		{"newline", "a\nb", `a\nb`},
		{"tab", "a\tb", `a\tb`},
		{"erase line", "x\x1b[2Ky", `x\x1b[2Ky`},
		{"conceal", "\x1b[8mhidden\x1b[0m", `\x1b[8mhidden\x1b[0m`},
		{"c1 csi", "a\u009b2Kb", `a\u009b2Kb`},
		{"bell and del", "\a\x7f", `\x07\x7f`},
		{"bidi override", "abc\u202etxt.exe", `abc\u202etxt.exe`},
		{"zero width", "a\u200bb", `a\u200bb`},
		{"line separator", "a\u2028b", `a\u2028b`},
		{"invalid utf-8", "a\xffb", `a\xffb`},
		{"unicode letters kept", "résumé — ünïcode", "résumé — ünïcode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Escape(tc.in); got != tc.want {
				t.Errorf("Escape(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestLinesKeepsNewlinesAndTabs(t *testing.T) {
	if got, want := Lines("a\n\tb\r\x1b[2K"), "a\n\tb\\r\\x1b[2K"; got != want {
		t.Errorf("Lines = %q, want %q", got, want)
	}
}

func FuzzEscape(f *testing.F) {
	for _, s := range []string{"", "w1", "a\rb", "\x1b[8m", "\u202e", "\xff\xfe", "a\\x1b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, lines := range []bool{false, true} {
			e := Escape(s)
			if lines {
				e = Lines(s)
			}
			if !utf8.ValidString(e) {
				t.Fatalf("not UTF-8: %q", e)
			}
			for _, r := range e {
				if lines && (r == '\n' || r == '\t') {
					continue
				}
				if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029' {
					t.Fatalf("%q escaped to %q still holds %U", s, e, r)
				}
			}
			again := Escape(e)
			if lines {
				again = Lines(e)
			}
			if again != e {
				t.Fatalf("escaping twice changes %q to %q", e, again)
			}
			if !lines && strings.ContainsAny(e, "\n\r") {
				t.Fatalf("Escape left a line break in %q", e)
			}
		}
	})
}
