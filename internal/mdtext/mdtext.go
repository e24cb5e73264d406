// Package mdtext is how a text harness did not write (a model's answer,
// a grader's evidence, a skill's or an eval file's words, a task's name)
// reaches Markdown that a CI system renders, such as a job summary: as
// text, never as markup. An image link there is fetched by every reader's
// browser, so a model's answer rendered as Markdown could send what the
// run read to any host, around the sandbox's network rules.
package mdtext

import (
	"strings"
	"unicode"
)

// Inline is s as inline Markdown text of at most n characters, on one
// line, with nothing in it read as markup: whitespace (newlines included)
// is collapsed, control and format characters dropped, and every ASCII
// punctuation character backslash-escaped (CommonMark lets any be, and
// GitHub's tables read `\|` as a pipe in the cell). Escaping "\" too is
// what keeps a written `\|` from closing the cell; escaping "<" and "&"
// keeps HTML and entities out; "`" keeps code spans out.
func Inline(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) && !unicode.IsSpace(r) || unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		s = string(r[:n]) + "…"
	}
	var b strings.Builder
	for _, r := range s {
		if r < 0x80 && unicode.IsPunct(r) || r < 0x80 && unicode.IsSymbol(r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
