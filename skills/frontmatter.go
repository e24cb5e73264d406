package skills

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/token"

	"github.com/harness-dev/harness/yamlsafe"
)

var bom = []byte("\xef\xbb\xbf")

// frontmatterError is why SKILL.md has no usable frontmatter.
type frontmatterError struct {
	Code string
	Msg  string
	Line int // 1-based line in SKILL.md, 0 when unknown
}

func (e *frontmatterError) Error() string { return e.Msg }

// splitFrontmatter separates the YAML frontmatter from the body. The
// frontmatter starts on the first line, which must be exactly `---` (after
// an optional UTF-8 BOM), and ends at the next line that is exactly `---`.
// CRLF line ends are accepted. yamlLine is the 1-based line of the first
// YAML line; bodyOffset is the byte offset of the body in data.
func splitFrontmatter(data []byte) (fm []byte, yamlLine int, body []byte, bodyOffset int, err error) {
	start := 0
	if bytes.HasPrefix(data, bom) {
		start = len(bom)
	}
	first, next, ok := line(data, start)
	if !ok || string(first) != "---" {
		return nil, 0, nil, 0, &frontmatterError{Code: CodeFrontmatterMissing, Msg: "SKILL.md must start with a line '---' opening the YAML frontmatter", Line: 1}
	}
	fmStart := next
	pos := next
	for n := 2; pos <= len(data); n++ {
		l, after, ok := line(data, pos)
		if !ok {
			break
		}
		if string(l) == "---" {
			return data[fmStart:pos], 2, data[after:], after, nil
		}
		pos = after
	}
	msg := "the frontmatter opened on line 1 is never closed: add a line '---' after the YAML"
	if n := gluedFence(data[fmStart:], 2); n > 0 {
		return nil, 0, nil, 0, &frontmatterError{Code: CodeFrontmatterUnclosed, Msg: fmt.Sprintf("the frontmatter opened on line 1 is never closed: line %d starts with '---' followed by text; put the closing '---' on a line of its own", n), Line: n}
	}
	return nil, 0, nil, 0, &frontmatterError{Code: CodeFrontmatterUnclosed, Msg: msg, Line: 1}
}

// gluedFence is the 1-based line (counting from firstLine) of the first
// line in fm that starts with '---' and goes on: a closing fence with the
// body's first line glued to it, a common slip that some parsers accept
// by splitting on the bare string (and so also cut any value holding
// '---'). 0 when there is none.
func gluedFence(fm []byte, firstLine int) int {
	pos := 0
	for n := firstLine; ; n++ {
		l, after, ok := line(fm, pos)
		if !ok {
			return 0
		}
		if bytes.HasPrefix(l, []byte("---")) && len(bytes.TrimSpace(l)) > 3 {
			return n
		}
		pos = after
	}
}

// line returns the line starting at pos without its line end (LF or CRLF)
// and the offset after it. ok is false at the end of data.
func line(data []byte, pos int) (l []byte, next int, ok bool) {
	if pos >= len(data) {
		return nil, len(data), false
	}
	i := bytes.IndexByte(data[pos:], '\n')
	if i < 0 {
		return data[pos:], len(data), true
	}
	l = data[pos : pos+i]
	l = bytes.TrimSuffix(l, []byte("\r"))
	return l, pos + i + 1, true
}

// yamlError is what goccy/go-yaml errors carry: a message and the token
// it is about.
type yamlError interface {
	GetToken() *token.Token
	GetMessage() string
}

// parseFrontmatter decodes the YAML into JSON-compatible values. Duplicate
// keys are an error (goccy/go-yaml rejects them by default).
func parseFrontmatter(fm []byte, yamlLine int) (map[string]any, error) {
	if err := printable(fm, yamlLine); err != nil {
		return nil, err
	}
	if m, ok := plainFrontmatter(fm); ok {
		return m, nil
	}
	// Bounded before the decoder follows an alias: a few lines of nested
	// anchors expand to billions of nodes.
	var bounds *yamlsafe.Error
	if err := yamlsafe.Check("frontmatter", fm, yamlsafe.Default); errors.As(err, &bounds) {
		return nil, &frontmatterError{Code: CodeFrontmatterInvalid, Msg: "the frontmatter " + bounds.Msg, Line: yamlLine + max(bounds.Line, 1) - 1}
	}
	var v any
	if err := yaml.UnmarshalWithOptions(fm, &v); err != nil {
		msg, ln := err.Error(), 0
		var ye yamlError
		if errors.As(err, &ye) {
			msg = ye.GetMessage()
			if t := ye.GetToken(); t != nil && t.Position != nil {
				ln = yamlLine + t.Position.Line - 1
			}
		}
		if g := gluedFence(fm, yamlLine); g > 0 && (ln == 0 || g < ln) {
			msg += fmt.Sprintf(" (line %d starts with '---' followed by text: if it was meant to close the frontmatter, put '---' on a line of its own)", g)
		}
		return nil, &frontmatterError{Code: CodeFrontmatterInvalid, Msg: "invalid YAML in frontmatter: " + msg, Line: ln}
	}
	if v == nil {
		return map[string]any{}, nil
	}
	m, ok := jsonValue(v).(map[string]any)
	if !ok {
		return nil, &frontmatterError{Code: CodeFrontmatterNotMapping, Msg: fmt.Sprintf("the frontmatter must be a YAML mapping of keys to values, not a %s", kindOf(v)), Line: yamlLine}
	}
	return m, nil
}

// printable refuses what YAML 1.2 does not allow in a stream (C0 and C1
// controls other than tab and line ends, DEL): go-yaml lets them through,
// and a control character hidden in a name or description reaches the
// model's catalog unseen by a reviewer.
func printable(fm []byte, yamlLine int) error {
	ln, col := yamlLine, 1
	for i := 0; i < len(fm); {
		r, size := utf8.DecodeRune(fm[i:])
		i += size
		switch {
		case r == '\n':
			ln, col = ln+1, 1
			continue
		case r == '\t' || r == '\r' || r == 0x85 || r == utf8.RuneError:
		case r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f:
			return &frontmatterError{Code: CodeFrontmatterInvalid, Msg: fmt.Sprintf("invalid YAML in frontmatter: non-printable character U+%04X at line %d, column %d; YAML does not allow it: remove it", r, ln, col), Line: ln}
		}
		col++
	}
	return nil
}

// jsonValue converts decoded YAML into values encoding/json can write:
// string-keyed maps, and no NaN or infinities.
func jsonValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = jsonValue(e)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(k)] = jsonValue(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonValue(e)
		}
		return out
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Sprint(x)
		}
		return x
	case float32:
		return jsonValue(float64(x))
	case string, bool, nil, int, int64, uint64, int32, uint32, int8, int16, uint8, uint16, uint:
		return x
	default:
		return fmt.Sprint(x)
	}
}

func kindOf(v any) string {
	switch v.(type) {
	case []any:
		return "list"
	case string:
		return "string"
	case bool:
		return "boolean"
	case nil:
		return "null"
	default:
		return "scalar"
	}
}

// Bounds of the headings kept per skill.
const (
	maxHeadings   = 32
	maxHeadingLen = 120
)

// headings are the ATX headings of a Markdown body, outside fenced code,
// without their '#' marks.
func headings(body []byte) []string {
	var out []string
	fence := ""
	for _, l := range strings.Split(string(body), "\n") {
		t := strings.TrimSpace(l)
		if fence != "" {
			if strings.HasPrefix(t, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fence = t[:3]
			continue
		}
		if !strings.HasPrefix(t, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimRight(strings.TrimLeft(t, "#"), "#"))
		if h == "" || len(t)-len(strings.TrimLeft(t, "#")) > 6 {
			continue
		}
		if utf8.RuneCountInString(h) > maxHeadingLen {
			h = string([]rune(h)[:maxHeadingLen])
		}
		out = append(out, h)
		if len(out) == maxHeadings {
			break
		}
	}
	return out
}
