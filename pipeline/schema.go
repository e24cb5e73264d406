package pipeline

// The embedded JSON Schemas of pipeline and batch files: compiled once,
// and their validation errors turned into lines a person can act on.

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// compile compiles an embedded schema; it is part of the binary, so a
// failure is a bug.
func compile(schema []byte, name string) *jsonschema.Schema {
	return compileRef(schema, name, "")
}

// compiled holds each embedded schema compiled once: compiling costs
// tens of milliseconds, more than checking a file against it, and a
// compiled schema is read-only.
var compiled sync.Map // name+ref -> *jsonschema.Schema

// compileRef compiles the part of an embedded schema at ref ("" = all).
func compileRef(schema []byte, name, ref string) *jsonschema.Schema {
	if s, ok := compiled.Load(name + ref); ok {
		return s.(*jsonschema.Schema)
	}
	s := compileRefOnce(schema, name, ref)
	compiled.Store(name+ref, s)
	return s
}

func compileRefOnce(schema []byte, name, ref string) *jsonschema.Schema {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		panic(name + ": " + err.Error())
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(name, doc); err != nil {
		panic(name + ": " + err.Error())
	}
	return c.MustCompile(name + ref)
}

// schemaProblems flattens a validation error into one line per problem:
// file:line: where: what.
func schemaProblems(ve *jsonschema.ValidationError, f *ast.File, name string) []string {
	var out []string
	var walk func(e *jsonschema.ValidationError)
	printer := message.NewPrinter(language.English)
	walk = func(e *jsonschema.ValidationError) {
		where := "the top level"
		if len(e.InstanceLocation) > 0 {
			where = strings.Join(e.InstanceLocation, ".")
		}
		// The schema's only oneOf is a phase's prompt source; its causes
		// (each "missing property") would read as a contradiction.
		if _, ok := e.ErrorKind.(*kind.OneOf); ok {
			out = append(out, fmt.Sprintf("  %s:%d: %s: give exactly one of prompt and prompt-file", name, lineOf(f, e.InstanceLocation), where))
			return
		}
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		msg := e.ErrorKind.LocalizedString(printer)
		loc := e.InstanceLocation
		if ap, ok := e.ErrorKind.(*kind.AdditionalProperties); ok && len(ap.Properties) > 0 {
			// Point at the unknown key itself, not at its object.
			loc = append(slices.Clone(loc), ap.Properties[0])
		}
		out = append(out, fmt.Sprintf("  %s:%d: %s: %s", name, lineOf(f, loc), where, msg))
	}
	walk(ve)
	slices.Sort(out)
	return slices.Compact(out)
}

// lineOf is the line of the YAML node at loc (JSON-pointer tokens), or of
// its nearest ancestor that can be found; 1 when none can.
func lineOf(f *ast.File, loc []string) int {
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

// jsonCompatible turns decoded YAML into what the schema validator takes:
// string keys, and with floats every number a float64. Without floats,
// integers stay as they are, for the document decoded into Go types (an
// extra body's integer sent with every digit). It builds new maps and
// slices, so the two readings of one document do not share them.
func jsonCompatible(v any, floats bool) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = jsonCompatible(e, floats)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(k)] = jsonCompatible(e, floats)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonCompatible(e, floats)
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
