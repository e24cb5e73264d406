package mdtext

import (
	"regexp"
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/mdtext/mdtexttest"
)

// hostile are texts a model, a grader or a skill's eval file could write.
var hostile = []struct{ name, text string }{
	{"pipe", "a | b || c"},
	{"escaped pipe", `a \| b \\| c`},
	{"newline", "line one\n\n| x | y |\n|---|---|\nline two"},
	{"html", `<img src=x onerror=alert(1)><script>alert(2)</script>`},
	{"entity", "&lt;b&gt; &amp; &#124;"},
	{"backticks", "```\ncode\n``` and `x|y`"},
	{"link", "[click](javascript:alert(1)) ![i](http://x/i.png)"},
	{"heading and list", "# H\n- item\n> quote"},
	{"control and format", "a\x00b\x1bc\u202ed\u200be"},
	{"emphasis", "*a* _b_ **c** ~~d~~"},
}

func TestInline(t *testing.T) {
	for _, tc := range hostile {
		t.Run(tc.name, func(t *testing.T) {
			cell := Inline(tc.text, 500)
			if strings.ContainsAny(cell, "\n\r") {
				t.Fatalf("Inline(%q) = %q spans lines", tc.text, cell)
			}
			md := "| a | b |\n| --- | --- |\n| " + cell + " | end |\n"
			html := mdtexttest.RenderGFM(t, []byte(md))
			if n := strings.Count(html, "<td>"); n != 2 {
				t.Errorf("the row has %d cells, want 2:\n%s\n%s", n, md, html)
			}
			for _, bad := range []string{"<code", "<a ", "<img", "<em", "<strong", "<del", "<script", "raw HTML", "<h1", "<li", "<blockquote"} {
				if strings.Contains(html, bad) {
					t.Errorf("%q became markup (%s):\n%s", tc.text, bad, html)
				}
			}
			// What a reader sees is the text, whitespace collapsed and
			// control and format characters dropped.
			want := strings.Join(strings.Fields(strings.Map(func(r rune) rune {
				if r < 0x20 && r != '\n' || r == '\u202e' || r == '\u200b' {
					return -1
				}
				return r
			}, tc.text)), " ")
			got := regexp.MustCompile(`(?s)<td>(.*?)</td>`).FindAllStringSubmatch(html, -1)
			if len(got) > 0 && htmlUnescape(got[0][1]) != want {
				t.Errorf("shown %q, want %q", htmlUnescape(got[0][1]), want)
			}
		})
	}
	if got := Inline(strings.Repeat("é", 30), 10); got != strings.Repeat("é", 10)+"…" {
		t.Errorf("truncated = %q", got)
	}
}

func htmlUnescape(s string) string {
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&quot;", `"`, "&#39;", "'", "&amp;", "&").Replace(s)
}

// FuzzInline: whatever a model writes, its cell stays one cell of one
// row, and nothing in it becomes markup.
func FuzzInline(f *testing.F) {
	for _, h := range hostile {
		f.Add(h.text)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cell := Inline(s, 200)
		if strings.ContainsAny(cell, "\n\r") {
			t.Fatalf("Inline(%q) = %q spans lines", s, cell)
		}
		html := mdtexttest.RenderGFM(t, []byte("| a | b |\n| --- | --- |\n| "+cell+" | end |\n"))
		if n := strings.Count(html, "<td>"); n != 2 {
			t.Fatalf("Inline(%q) = %q: the row has %d cells:\n%s", s, cell, n, html)
		}
		for _, bad := range []string{"<code", "<a ", "<img", "<em", "<strong", "<del", "raw HTML"} {
			if strings.Contains(html, bad) {
				t.Fatalf("Inline(%q) = %q became markup (%s):\n%s", s, cell, bad, html)
			}
		}
	})
}
