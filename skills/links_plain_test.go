package skills

import (
	"net/url"
	"slices"
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"
)

// goldmarkDests is what checkLinks reads with the parser: the destination
// of every link and image, in document order.
func goldmarkDests(body []byte) []string {
	doc := goldmark.DefaultParser().Parse(text.NewReader(body))
	var out []string
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch l := n.(type) {
		case *ast.Link:
			out = append(out, string(l.Destination))
		case *ast.Image:
			out = append(out, string(l.Destination))
		}
		return ast.WalkContinue, nil
	})
	return out
}

var plainLinkBodies = []struct {
	body  string
	dests []string // nil with ok false: left to goldmark
	ok    bool
}{
	{"# skill\nSee [the guide](references/guide.md).\n", []string{"references/guide.md"}, true},
	{"No links at all.\n", nil, true},
	{"![diagram](assets/a.png) and [b](b.md)\n- item [c](scripts/c.sh)\n1. [d](#anchor)\n", []string{"assets/a.png", "b.md", "scripts/c.sh", "#anchor"}, true},
	{"[empty]()\n", []string{""}, true},
	{"[a](https://example.com/x?y=1#z) (a remark) [note] here\n", []string{"https://example.com/x?y=1#z"}, true},
	{"*[a](b.md)* and _[c](d.md)_\n", []string{"b.md", "d.md"}, true},
	{"Title\n=====\n[a](b.md)\n", []string{"b.md"}, true},
	// Everything below has another reading, or needs one: goldmark's.
	{"`[a](b.md)`\n", nil, false},
	{"```\n[a](b.md)\n```\n", nil, false},
	{"~~~\n[a](b.md)\n~~~\n", nil, false},
	{"    [a](b.md)\n", nil, false},
	{"\t[a](b.md)\n", nil, false},
	{"<a href=\"b.md\">x</a>\n", nil, false},
	{"> [a](b.md)\n", nil, false},
	{"\\[a](b.md)\n", nil, false},
	{"[a][ref]\n\n[ref]: b.md\n", nil, false},
	{"[a]( b.md)\n", nil, false},
	{"[a](b.md \"title\")\n", nil, false},
	{"[a](b(c).md)\n", nil, false},
	{"[a](b&amp;c.md)\n", nil, false},
	{"[x [a](b.md)\n", nil, false},
	{"[a\nb](c.md)\n", nil, false},
	{"text](c.md)\n", nil, false},
	{"[a](b.md\n", nil, false},
	{"[a](b.md)\r\n", nil, false},
}

func TestPlainLinks(t *testing.T) {
	for _, c := range plainLinkBodies {
		got, ok := plainLinks([]byte(c.body), nil)
		if ok != c.ok || !slices.Equal(got, c.dests) {
			t.Errorf("plainLinks(%q) = %q, %v; want %q, %v", c.body, got, ok, c.dests, c.ok)
		}
		if ok && !slices.Equal(got, goldmarkDests([]byte(c.body))) {
			t.Errorf("plainLinks(%q) = %q, goldmark reads %q", c.body, got, goldmarkDests([]byte(c.body)))
		}
	}
}

// FuzzPlainLinks holds the fast path to goldmark: for every body it
// accepts, it must find exactly the links and images goldmark finds.
func FuzzPlainLinks(f *testing.F) {
	for _, c := range plainLinkBodies {
		f.Add([]byte(c.body))
	}
	for _, s := range []string{
		"[a]: b\n", "[a] [b](c)\n", "[a](b)(c)\n", "![a](b)[c](d)\n", "**[a](b)**\n", "[*a](b)*\n",
		"- [a](b)\n  - [c](d)\n", "   [a](b)\n", "[a](b)\n---\n", "&#91;a](b)\n", "[a]&#40;b)\n", "[a](b)]\n",
		"* * *\n[a](b)\n", "1) [a](b)\n", "[a](b)c)\n", "[](b)\n", "[a](b:c)\n", "[a](%20)\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, ok := plainLinks(body, nil)
		if !ok {
			return
		}
		if want := goldmarkDests(body); !slices.Equal(got, want) {
			t.Fatalf("plainLinks(%q) = %q, goldmark reads %q", body, got, want)
		}
	})
}

// FuzzHasScheme: hasScheme lets localTarget skip url.Parse, so it must
// never say no where url.Parse finds a scheme.
func FuzzHasScheme(f *testing.F) {
	for _, s := range []string{"https://x", "mailto:a@b", "a+b.c-d:x", "references/a.md", ":x", "1a:b", "a", "C:\\x", "a b:c", "x\x00:y", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, dest string) {
		if u, err := url.Parse(dest); err == nil && u.Scheme != "" && !hasScheme(dest) {
			t.Fatalf("url.Parse(%q) finds scheme %q, hasScheme says none", dest, u.Scheme)
		}
	})
}
