package mdtext

import (
	"github.com/harness-dev/harness/internal/mdtext/mdtexttest"
	"strings"
	"testing"
)

// TestInlineAutolinksHeld: GFM turns bare URLs, www. names and e-mail
// addresses into links without any markup around them; a model's answer
// full of them stays text in a cell, whatever surrounds them (emphasis,
// parentheses, a non-breaking space, upper case, full-width look-alikes).
func TestInlineAutolinksHeld(t *testing.T) {
	for _, s := range []string{
		"see https://evil.example/x?a=1 now", "www.evil.example/path", "mail me@evil.example", "http://x.y", "ftp://evil.example",
		"xmpp:me@evil.example", "mailto:me@evil.example", "HTTPS://EVIL.EXAMPLE", "https：//evil.example", "www．evil．example",
		"a\u00a0https://evil.example", "(https://evil.example)", "*https://evil.example*", "~www.evil.example~", "_www.evil.example_",
		"https://evil.example\u2028x", "x www\u00adevil.example", "<https://evil.example>", "[x]: https://evil.example",
	} {
		cell := Inline(s, 500)
		html := mdtexttest.RenderGFM(t, []byte("| a | b |\n| --- | --- |\n| "+cell+" | end |\n"))
		if strings.Contains(html, "<a ") || strings.Count(html, "<td>") != 2 {
			t.Errorf("%q as %q became markup:\n%s", s, cell, html)
		}
	}
}
