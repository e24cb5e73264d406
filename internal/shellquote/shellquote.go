// Package shellquote writes a command line that harness prints for a
// person to run (how to install what a skill needs, how to start an MCP
// server a registry lists) from words that others wrote: each word is
// quoted for the shell, so that a name holding "; curl ... | sh" or
// "$(...)" stays one word of one command.
package shellquote

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Line joins words into one command line for bash, each quoted where it
// needs it; false when a word cannot be written as one (a NUL byte).
func Line(words ...string) (string, bool) {
	out := make([]string, 0, len(words))
	for i, w := range words {
		if plain(w) && (i > 0 || !strings.Contains(w, "=")) {
			out = append(out, w)
			continue
		}
		q, err := syntax.Quote(w, syntax.LangBash)
		if err != nil {
			return "", false
		}
		out = append(out, q)
	}
	return strings.Join(out, " "), true
}

// plain says whether w is a word the shell reads as written: the
// characters of package names, versions and URLs that no shell gives a
// meaning inside a word ("=" included: it makes an assignment only
// before the command's name, and these words follow it).
func plain(w string) bool {
	if w == "" {
		return false
	}
	for _, r := range w {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@%+=:,./_-", r)) {
			return false
		}
	}
	return true
}

// Comment is text made fit to follow a command as a "# ..." comment:
// one line, whatever line breaks or control characters it held.
func Comment(text string) string {
	return strings.Join(strings.FieldsFunc(text, func(r rune) bool { return r < ' ' || r == 0x7f || r == '\u2028' || r == '\u2029' || r == '\u0085' }), " ")
}
