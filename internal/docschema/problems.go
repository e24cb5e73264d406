package docschema

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// MaxProblems is how many problems Problems tells; the rest are counted.
const MaxProblems = 20

// Leaves are the problems of a validation error that have no causes of
// their own, in the library's order.
func Leaves(ve *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(ve.Causes) == 0 {
		return []*jsonschema.ValidationError{ve}
	}
	var out []*jsonschema.ValidationError
	for _, c := range ve.Causes {
		out = append(out, Leaves(c)...)
	}
	return out
}

var english = message.NewPrinter(language.English)

// Message says what is wrong at e, in English, without the location.
// The library's words for an enum or a const quote the value and every
// allowed one: where either is large (a model's megabyte string, an
// enum of a thousand values) they are said in a few words instead.
func Message(e *jsonschema.ValidationError) string {
	switch k := e.ErrorKind.(type) {
	case *kind.Enum:
		if len(k.Want) > 16 || !small(k.Got) || slices.ContainsFunc(k.Want, func(w any) bool { return !small(w) }) {
			return fmt.Sprintf("the value is not one of the %d the schema lists", len(k.Want))
		}
	case *kind.Const:
		if !small(k.Got) || !small(k.Want) {
			return "the value is not the one the schema requires"
		}
	}
	return e.ErrorKind.LocalizedString(english)
}

// small says whether v is a scalar short enough to quote in a message.
func small(v any) bool {
	switch x := v.(type) {
	case string:
		return len(x) <= 100
	case map[string]any, []any:
		return false
	}
	return true
}

// Pointer is e's location as a JSON pointer ("/" for the document).
func Pointer(e *jsonschema.ValidationError) string {
	return "/" + strings.Join(e.InstanceLocation, "/")
}

// Problems are a validation error's problems as sorted lines
// "/pointer: what", each once, at most MaxProblems and a line that counts
// the rest.
func Problems(ve *jsonschema.ValidationError) []string {
	var out []string
	for _, e := range Leaves(ve) {
		out = append(out, cut(Pointer(e)+": "+Message(e), 300))
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if n := len(out) - MaxProblems; n > 0 {
		out = append(out[:MaxProblems], fmt.Sprintf("and %d more", n))
	}
	return out
}

// cut shortens a line to at most n bytes, on a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// Lines tells a validation error of the document file as one sorted line
// per problem, "  file:line: where: what", where lineOf gives the line of
// a location (JSON-pointer tokens). A oneOf that fails is told as the one
// sentence oneOf gives, when it gives one: its causes (each "missing
// property") would read as a contradiction.
func Lines(ve *jsonschema.ValidationError, file string, lineOf func(loc []string) int, oneOf string) []string {
	var out []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		where := "the top level"
		if len(e.InstanceLocation) > 0 {
			where = strings.Join(e.InstanceLocation, ".")
		}
		if _, ok := e.ErrorKind.(*kind.OneOf); ok && oneOf != "" {
			out = append(out, fmt.Sprintf("  %s:%d: %s: %s", file, lineOf(e.InstanceLocation), where, oneOf))
			return
		}
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		loc := e.InstanceLocation
		if ap, ok := e.ErrorKind.(*kind.AdditionalProperties); ok && len(ap.Properties) > 0 {
			// Point at the unknown key itself, not at its object.
			loc = append(slices.Clone(loc), ap.Properties[0])
		}
		out = append(out, fmt.Sprintf("  %s:%d: %s: %s", file, lineOf(loc), where, Message(e)))
	}
	walk(ve)
	slices.Sort(out)
	return slices.Compact(out)
}
