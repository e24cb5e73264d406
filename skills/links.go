package skills

import (
	"bytes"
	"fmt"
	"net/url"
	"path"
	"strings"
	"sync"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
)

// checkLinks resolves every relative link and image in the body of
// SKILL.md against the skill's resources: a target inside the skill marks
// those resources referenced; anything else is a broken-reference warning.
func checkLinks(parsers *markdownParsers, s *Skill) []Diagnostic {
	if len(s.body) == 0 {
		return nil
	}
	// A body whose links plainLinks can read, all pointing at resources of
	// the skill, needs no parser. Any other body is parsed, and the
	// parser finds the same links again (marking a resource twice is
	// harmless) and says on which line each broken one is.
	if dests, ok := plainLinks(s.body, nil); ok && markAll(s, dests) {
		return nil
	}
	md := parsers.get()
	defer parsers.put(md)
	doc := md.Parse(text.NewReader(s.body))
	var ds []Diagnostic
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		var dest []byte
		switch l := n.(type) {
		case *ast.Link:
			dest = l.Destination
		case *ast.Image:
			dest = l.Destination
		default:
			return ast.WalkContinue, nil
		}
		target, ok := localTarget(string(dest))
		if !ok {
			return ast.WalkContinue, nil
		}
		if target == "" || !markReferenced(s, target) {
			ds = append(ds, Diagnostic{
				Severity: SeverityWarning,
				Code:     CodeBrokenReference,
				Detail:   fmt.Sprintf("link target '%s' is not a file inside the skill", dest),
				Path:     s.SkillPath,
				Line:     s.bodyLine + lineOf(s.body, n, dest),
			})
		}
		return ast.WalkContinue, nil
	})
	return ds
}

// markAll marks the resources every destination points at, and reports
// whether each one is a file or directory inside the skill.
func markAll(s *Skill, dests []string) bool {
	for _, d := range dests {
		target, ok := localTarget(d)
		if ok && (target == "" || !markReferenced(s, target)) {
			return false
		}
	}
	return true
}

// markdownParsers hands each loading goroutine its own Markdown parser:
// building one costs more than parsing a short SKILL.md, and goldmark
// does not promise that a parser may be shared between goroutines.
type markdownParsers struct{ pool sync.Pool }

func (m *markdownParsers) get() parser.Parser {
	if p, ok := m.pool.Get().(parser.Parser); ok {
		return p
	}
	return goldmark.DefaultParser()
}

func (m *markdownParsers) put(p parser.Parser) { m.pool.Put(p) }

// localTarget returns the skill-relative path a link points at. ok is
// false for links that are not about files (URLs, mail, in-page anchors);
// target is "" for a local link that leaves the skill.
func localTarget(dest string) (target string, ok bool) {
	if dest == "" || strings.HasPrefix(dest, "#") {
		return "", false
	}
	if hasScheme(dest) {
		if u, err := url.Parse(dest); err == nil && u.Scheme != "" {
			return "", false
		}
	}
	if i := strings.IndexAny(dest, "?#"); i >= 0 {
		dest = dest[:i]
	}
	if un, err := url.PathUnescape(dest); err == nil {
		dest = un
	}
	// {baseDir} is the skill's own directory, as clients that expand it
	// (Claude Code) read it.
	if rest, ok := strings.CutPrefix(dest, "{baseDir}"); ok && (rest == "" || rest[0] == '/') {
		dest = "." + rest
	}
	if strings.HasPrefix(dest, "/") {
		return "", true
	}
	p := path.Clean(dest)
	if p == ".." || strings.HasPrefix(p, "../") {
		return "", true
	}
	return p, true
}

// hasScheme reports whether dest starts as a URL with a scheme does
// ("x:", a letter, then letters, digits, '+', '-' or '.'): only then can
// url.Parse find one, so a plain relative path skips building a URL.
func hasScheme(dest string) bool {
	for i := 0; i < len(dest); i++ {
		c := dest[i]
		switch {
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.':
			if i == 0 {
				return false
			}
		case c == ':':
			return i > 0
		default:
			return false
		}
	}
	return false
}

// markReferenced marks the resource at target, or every resource below a
// directory target, and reports whether anything matched.
func markReferenced(s *Skill, target string) bool {
	if target == "." {
		return true
	}
	found := false
	for i := range s.Resources {
		r := &s.Resources[i]
		if r.Path == target || strings.HasPrefix(r.Path, target+"/") {
			r.Referenced = true
			found = true
		}
	}
	return found
}

// lineOf finds the 0-based line of a link in the body: the first
// occurrence of its destination at or after the start of its block.
func lineOf(body []byte, n ast.Node, dest []byte) int {
	start := 0
	for p := n; p != nil; p = p.Parent() {
		if p.Type() == ast.TypeBlock && p.Lines().Len() > 0 {
			start = p.Lines().At(0).Start
			break
		}
	}
	if start > len(body) {
		start = 0
	}
	at := start
	if i := bytes.Index(body[start:], dest); i >= 0 {
		at = start + i
	}
	return bytes.Count(body[:at], []byte("\n"))
}
