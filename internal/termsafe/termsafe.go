// Package termsafe is how every text harness did not write itself (a
// model's call ids and arguments, a skill's name or description, an
// index's entries, a provider's error body) reaches a terminal or a log: a
// control character in it is shown escaped, never interpreted. A carriage
// return, an ANSI erase or conceal sequence or a bidirectional override
// could otherwise make a row a person approves from say something other
// than what the record holds. It knows nothing of runs.
package termsafe

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Escape returns s on one line with every character a terminal could act
// on written as a Go escape: C0 and C1 controls (ESC, CR, LF, TAB, DEL
// included), Unicode format characters (bidirectional overrides and
// isolates, zero-width characters), the line and paragraph separators, and
// bytes that are not UTF-8. Everything else is kept as it is, backslashes
// included, so that Escape of an escaped text changes nothing and the
// usual text (JSON arguments, paths) reads as written.
func Escape(s string) string {
	if clean(s, false) {
		return s
	}
	var b strings.Builder
	write(&b, s, false)
	return b.String()
}

// Lines is Escape for a text whose newlines are its own (a run's progress
// lines, an answer): newlines and tabs are kept, every other control is
// escaped.
func Lines(s string) string {
	if clean(s, true) {
		return s
	}
	var b strings.Builder
	write(&b, s, true)
	return b.String()
}

func clean(s string, lines bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			return cleanRunes(s[i:], lines)
		}
		if c < 0x20 || c == 0x7f {
			if !(lines && (c == '\n' || c == '\t')) {
				return false
			}
		}
	}
	return true
}

func cleanRunes(s string, lines bool) bool {
	for _, r := range s {
		if r == utf8.RuneError || shown(r, lines) != "" {
			return false
		}
	}
	return true
}

func write(b *strings.Builder, s string, lines bool) {
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		if r == utf8.RuneError && n <= 1 {
			fmt.Fprintf(b, `\x%02x`, s[0])
			s = s[1:]
			continue
		}
		if e := shown(r, lines); e != "" {
			b.WriteString(e)
		} else {
			b.WriteRune(r)
		}
		s = s[n:]
	}
}

// shown is the escape of r, or "" when r is shown as itself.
func shown(r rune, lines bool) string {
	switch {
	case lines && (r == '\n' || r == '\t'):
		return ""
	case r == '\n':
		return `\n`
	case r == '\r':
		return `\r`
	case r == '\t':
		return `\t`
	case r == 0x1b:
		return `\x1b`
	case r < 0x20 || r == 0x7f:
		return fmt.Sprintf(`\x%02x`, r)
	case unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029':
		if r <= 0xffff {
			return fmt.Sprintf(`\u%04x`, r)
		}
		return fmt.Sprintf(`\U%08x`, r)
	}
	return ""
}
