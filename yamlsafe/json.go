package yamlsafe

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
)

// AsJSON turns a decoded YAML document into what JSON tools take: string
// keys, and with floats every number a float64 (what a JSON Schema
// validator compares). Without floats, integers stay as they are, for a
// document decoded into Go types (an integer sent on with every digit).
// It builds new maps and slices, so two readings of one document share
// none.
func AsJSON(v any, floats bool) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = AsJSON(e, floats)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(k)] = AsJSON(e, floats)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = AsJSON(e, floats)
		}
		return out
	case int:
		if floats {
			return float64(x)
		}
	case int64:
		if floats {
			return float64(x)
		}
	case uint64:
		if floats {
			return float64(x)
		}
	}
	return v
}

// LineOf is the line of the node of f at loc (JSON-pointer tokens), or of
// its nearest ancestor that can be found; 1 when none can.
func LineOf(f *ast.File, loc []string) int {
	if f == nil {
		return 1
	}
	for n := len(loc); n >= 0; n-- {
		var b strings.Builder
		b.WriteString("$")
		for _, tok := range loc[:n] {
			if _, err := strconv.Atoi(tok); err == nil {
				fmt.Fprintf(&b, "[%s]", tok)
			} else {
				fmt.Fprintf(&b, ".%s", tok)
			}
		}
		p, err := yaml.PathString(b.String())
		if err != nil {
			continue
		}
		node, err := p.FilterFile(f)
		if err != nil || node == nil || node.GetToken() == nil || node.GetToken().Position == nil {
			continue
		}
		return node.GetToken().Position.Line
	}
	return 1
}
