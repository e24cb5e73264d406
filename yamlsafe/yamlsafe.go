// Package yamlsafe bounds a YAML document before anything decodes it:
// its size in bytes, its tokens, its nesting, and the nodes its aliases
// would expand to. Every YAML file harness reads goes through Check (or
// Unmarshal, which decodes what Check passed with goccy/go-yaml).
//
// The bounds exist because a decoder expands aliases: a dozen lines of
// nested anchors (billion laughs) decode to billions of nodes. goccy's
// parser also costs more than linear time in the nesting and in the
// tokens of a document, so both are bounded on the scanner's tokens
// before the parser sees them, and aliases are counted on the parsed
// tree, where they are still references, before the decoder follows
// them. It knows nothing of what the documents mean.
//
// A document that passed is then read as JSON tools read it (AsJSON),
// and a problem found in it is placed on its line (LineOf).
package yamlsafe

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/scanner"
	"github.com/goccy/go-yaml/token"
)

// Limits bound one document. A zero field takes Default's value.
type Limits struct {
	// Bytes bounds the document's size.
	Bytes int
	// Tokens bounds what the scanner yields, before the parser, whose
	// time grows faster than the tokens it is given.
	Tokens int
	// Depth bounds nesting, as written and after aliases are expanded.
	Depth int
	// Nodes bounds the nodes of the document once every alias is
	// expanded: what a decoder builds.
	Nodes int
}

// Default bounds are far above any pipeline, batch, config or
// frontmatter harness documents, and low enough that a document at the
// bound parses in well under a second.
var Default = Limits{Bytes: 1 << 20, Tokens: 1 << 15, Depth: 64, Nodes: 1 << 18}

func (l Limits) orDefault() Limits {
	if l.Bytes <= 0 {
		l.Bytes = Default.Bytes
	}
	if l.Tokens <= 0 {
		l.Tokens = Default.Tokens
	}
	if l.Depth <= 0 {
		l.Depth = Default.Depth
	}
	if l.Nodes <= 0 {
		l.Nodes = Default.Nodes
	}
	return l
}

// Error is a document refused for its size or shape, at a line (0 when
// the whole document is at fault).
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return e.File + ": " + e.Msg
}

// ErrBounds is what errors.Is finds in every *Error.
var ErrBounds = errors.New("YAML document over its bounds")

func (e *Error) Is(target error) bool { return target == ErrBounds }

// Check refuses a document over lim, naming file and the line where the
// bound was crossed. A document that is not YAML is left for the
// decoder to refuse with its own message; Check returns nil for it.
func Check(file string, data []byte, lim Limits) error {
	lim = lim.orDefault()
	if len(data) > lim.Bytes {
		return &Error{File: file, Msg: fmt.Sprintf("is %d bytes, more than the %d a YAML file may hold", len(data), lim.Bytes)}
	}
	tokens, aliases, err := scan(file, string(data), lim)
	if err != nil || !aliases {
		// Without an alias a document is no larger than its tokens
		// (a few nodes each, far below Nodes) and no deeper than the
		// nesting scan bounded, so it need not be parsed twice.
		return err
	}
	f, err := parser.Parse(tokens, 0)
	if err != nil {
		return nil
	}
	return count(file, f, lim)
}

// Unmarshal is Check with Default's bounds, then yaml.UnmarshalWithOptions.
func Unmarshal(file string, data []byte, v any, opts ...yaml.DecodeOption) error {
	if err := Check(file, data, Default); err != nil {
		return err
	}
	return yaml.UnmarshalWithOptions(data, v, opts...)
}

// scan tokenizes src as goccy's lexer does, stopping at the token bound
// and at a nesting the parser would take too long over. Nesting is
// counted on the tokens: flow brackets, plus an indentation stack of the
// block indicators (a "- " or a key's column), which is at least half
// the block nesting since every block level but a sequence directly
// under a key is indented further.
func scan(file, src string, lim Limits) (tokens token.Tokens, aliases bool, err error) {
	var s scanner.Scanner
	s.Init(src)
	var cols []int // columns of the open block levels, increasing
	flow, line := 0, 0
	var prev *token.Token
	for {
		sub, err := s.Scan()
		if err == io.EOF {
			break
		}
		for _, tk := range sub {
			if len(tokens) >= lim.Tokens {
				return nil, false, &Error{File: file, Line: tk.Position.Line, Msg: fmt.Sprintf("holds more than %d YAML tokens", lim.Tokens)}
			}
			tokens.Add(tk)
			switch tk.Type {
			case token.CommentType:
				continue
			case token.AliasType:
				aliases = true
			case token.SequenceStartType, token.MappingStartType:
				flow++
			case token.SequenceEndType, token.MappingEndType:
				flow = max(flow-1, 0)
			}
			if flow == 0 {
				if tk.Position.Line != line {
					line = tk.Position.Line
					cols = popFrom(cols, tk.Position.Column)
				}
				switch tk.Type {
				case token.SequenceEntryType, token.MappingKeyType:
					cols = append(popFrom(cols, tk.Position.Column), tk.Position.Column)
				case token.MappingValueType:
					c := tk.Position.Column
					if prev != nil && prev.Position.Line == tk.Position.Line {
						c = prev.Position.Column
					}
					cols = append(popFrom(cols, c), c)
				}
			}
			if d := flow + len(cols); d > lim.Depth {
				return nil, false, &Error{File: file, Line: tk.Position.Line, Msg: fmt.Sprintf("nests deeper than %d levels", lim.Depth)}
			}
			prev = tk
		}
	}
	return tokens, aliases, nil
}

func popFrom(cols []int, col int) []int {
	for len(cols) > 0 && cols[len(cols)-1] >= col {
		cols = cols[:len(cols)-1]
	}
	return cols
}

// counter walks a parsed document in the order a decoder reads it,
// keeping for each anchor the size and height of its node expanded, so
// that an alias costs what the decoder will build for it.
type counter struct {
	file    string
	lim     Limits
	total   int
	anchors map[string]shape
}

type shape struct{ nodes, height int }

func count(file string, f *ast.File, lim Limits) error {
	c := &counter{file: file, lim: lim, anchors: map[string]shape{}}
	for _, doc := range f.Docs {
		if doc.Body == nil {
			continue
		}
		if _, err := c.walk(doc.Body, 1); err != nil {
			return err
		}
	}
	return nil
}

// walk returns n's shape expanded; depth is n's own depth, aliases
// expanded above it included.
func (c *counter) walk(n ast.Node, depth int) (shape, error) {
	if n == nil {
		return shape{}, nil
	}
	if depth > c.lim.Depth {
		return shape{}, c.refuse(n, fmt.Sprintf("nests deeper than %d levels once its aliases are expanded", c.lim.Depth))
	}
	var kids []ast.Node
	step := 1 // a key and its value are one level of their mapping
	switch n := n.(type) {
	case *ast.AliasNode:
		s, ok := c.anchors[n.Value.GetToken().Value]
		if !ok {
			// Unknown, or its own anchor's value (the decoder gives
			// nil for a self reference): a node of its own.
			s = shape{nodes: 1, height: 1}
		}
		if depth-1+s.height > c.lim.Depth {
			return shape{}, c.refuse(n, fmt.Sprintf("nests deeper than %d levels once the alias *%s is expanded", c.lim.Depth, n.Value.GetToken().Value))
		}
		if err := c.add(n, s.nodes); err != nil {
			return shape{}, err
		}
		return s, nil
	case *ast.AnchorNode:
		name := n.Name.GetToken().Value
		// Until its value is read, the anchor refers to itself.
		delete(c.anchors, name)
		s, err := c.walk(n.Value, depth)
		if err != nil {
			return shape{}, err
		}
		c.anchors[name] = s
		return s, nil
	case *ast.TagNode:
		return c.walk(n.Value, depth)
	case *ast.MappingKeyNode:
		return c.walk(n.Value, depth)
	case *ast.DocumentNode:
		return c.walk(n.Body, depth)
	case *ast.MappingNode:
		for _, v := range n.Values {
			kids = append(kids, v)
		}
	case *ast.MappingValueNode:
		kids, step = []ast.Node{n.Key, n.Value}, 0
	case *ast.SequenceNode:
		kids = n.Values
	}
	if err := c.add(n, 1); err != nil {
		return shape{}, err
	}
	out := shape{nodes: 1, height: 1}
	for _, k := range kids {
		s, err := c.walk(k, depth+step)
		if err != nil {
			return shape{}, err
		}
		out.nodes = min(out.nodes+s.nodes, c.lim.Nodes+1)
		out.height = max(out.height, s.height+step)
	}
	return out, nil
}

func (c *counter) add(n ast.Node, nodes int) error {
	c.total = min(c.total+nodes, c.lim.Nodes+1)
	if c.total > c.lim.Nodes {
		return c.refuse(n, fmt.Sprintf("expands to more than %d YAML nodes (its aliases counted as the nodes they repeat)", c.lim.Nodes))
	}
	return nil
}

func (c *counter) refuse(n ast.Node, msg string) error {
	line := 0
	if tk := n.GetToken(); tk != nil && tk.Position != nil {
		line = tk.Position.Line
	}
	return &Error{File: c.file, Line: line, Msg: msg}
}

// quoted is text a parser's message quotes from the document.
var quoted = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'[^']*'|`[^`]*`")

// Reason is a decode error as line, column and the parser's reason, with
// no byte of the document: goccy's own formatting prints the offending
// lines, and a parser's message quotes tokens, so a file that is not what
// it seems (a link to /proc/self/environ, a key file) would reach stderr
// and the logs. Quoted text is replaced by "…".
func Reason(err error) string {
	var be *Error
	if errors.As(err, &be) {
		return be.Error()
	}
	msg := strings.TrimSpace(yaml.FormatError(err, false, false))
	pos := ""
	if m := position.FindStringSubmatch(msg); m != nil {
		pos, msg = "line "+m[1]+", column "+m[2]+": ", msg[len(m[0]):]
	}
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	msg = quoted.ReplaceAllString(msg, `"…"`)
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	return pos + strings.ToValidUTF8(msg, "?")
}

var position = regexp.MustCompile(`^\[(\d+):(\d+)\] `)
