// Package docschema holds what harness does with JSON Schemas: its own
// embedded schemas compiled once, schemas from outside compiled without
// reaching past the document and checking values within a bound of steps
// and number sizes, and a validation error told as lines a person can act
// on.
package docschema

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// compiled holds each embedded schema compiled once: compiling costs
// tens of milliseconds, more than checking a file against it, and a
// compiled schema is read-only.
// It is keyed by the schema's bytes, not its name, so two packages whose
// schemas share a file name never get each other's.
var compiled sync.Map // embeddedKey -> *jsonschema.Schema

type embeddedKey struct {
	sum [sha256.Size]byte
	ref string
}

// Embedded is the part at ref ("" for all) of a schema compiled into the
// binary under name. It is part of harness, so a schema that does not
// compile is a bug, and it panics.
func Embedded(name string, src []byte, ref string) *jsonschema.Schema {
	key := embeddedKey{sha256.Sum256(src), ref}
	if s, ok := compiled.Load(key); ok {
		return s.(*jsonschema.Schema)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(src))
	if err != nil {
		panic(name + ": " + err.Error())
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(name, doc); err != nil {
		panic(name + ": " + err.Error())
	}
	s := c.MustCompile(name + ref)
	compiled.Store(key, s)
	return s
}

// Compile compiles a schema harness did not write (a tool's parameters,
// whatever an MCP server or a skill declares, an eval check's, an answer
// schema). It must be self-contained: a $ref to another document is
// refused, so compiling opens no file and fetches no URL. The library's
// default loader reads file: URLs, which would let the schema's author
// make harness read, or wait forever on, a path of the host. What it
// compiles checks values within a bound (Schema.Validate).
func Compile(name string, src []byte) (*Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(src))
	if err != nil {
		return nil, err
	}
	out := &Schema{}
	c := jsonschema.NewCompiler()
	c.UseLoader(selfContained{})
	// Every schema object of the document gets the step counter, so
	// each evaluation the validator makes is counted where it is made.
	c.RegisterVocabulary(&jsonschema.Vocabulary{
		URL: "harness:///vocab/steps",
		Compile: func(*jsonschema.CompilerContext, map[string]any) (jsonschema.SchemaExt, error) {
			return (*stepCounter)(out), nil
		},
	})
	c.AssertVocabs()
	// A hierarchical URL of no place: a relative $ref resolves to
	// another URL of it, which the loader refuses. Under a relative name
	// the library would resolve it against the working directory, and
	// under an opaque one ("harness:x") to the schema itself.
	u := "harness:///" + url.PathEscape(name)
	if err := c.AddResource(u, doc); err != nil {
		return nil, err
	}
	if out.s, err = c.Compile(u); err != nil {
		return nil, err
	}
	return out, nil
}

// MaxSteps bounds the evaluations of (sub)schemas one check of a value
// makes. A schema is a graph: $defs that each refer twice to the one
// before make a few hundred bytes whose check of {} takes 2^n steps, and
// the validator has no bound or cancellation of its own. A legitimate
// check makes a few steps per value of the document.
const MaxSteps = 1 << 18

// ErrTooCostly is a check that passed MaxSteps, or a number too large to
// compare (see MaxNumberDigits).
var ErrTooCostly = errors.New("too costly to check")

// Schema is a compiled schema from outside, checked within bounds. Checks
// of one Schema run one at a time (they share its step count).
type Schema struct {
	s     *jsonschema.Schema
	mu    sync.Mutex
	steps int
}

// stepCounter is a Schema seen as the extension every schema object of
// it carries.
type stepCounter Schema

type overBudget struct{}

func (c *stepCounter) Validate(*jsonschema.ValidatorContext, any) {
	c.steps++
	if c.steps > MaxSteps {
		// Unwinds the validator, which recovers nothing, to Validate.
		panic(overBudget{})
	}
}

// Validate checks v (as jsonschema.UnmarshalJSON decodes it): nil, a
// *jsonschema.ValidationError, or an error wrapping ErrTooCostly.
func (s *Schema) Validate(v any) (err error) {
	if err := checkNumbers(v); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.steps = 0
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(overBudget); !ok {
				panic(r)
			}
			err = fmt.Errorf("%w: checking it against the schema passed %d steps (a schema whose references multiply, or a value too large for it)", ErrTooCostly, MaxSteps)
		}
	}()
	return s.s.Validate(v)
}

// MaxNumberDigits bounds a number's digits and the size of its exponent.
// The validator compares numbers as exact fractions (math/big): 1e999999
// is nine bytes of JSON and a million digits to compare, tens of
// milliseconds each. No value a tool or an answer means needs more than
// float64's range.
const MaxNumberDigits = 400

// checkNumbers refuses a document holding a number past MaxNumberDigits.
func checkNumbers(v any) error {
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			if err := checkNumbers(e); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range x {
			if err := checkNumbers(e); err != nil {
				return err
			}
		}
	case json.Number:
		if !numberInBounds(string(x)) {
			cut := string(x)
			if len(cut) > 40 {
				cut = cut[:40] + "..."
			}
			return fmt.Errorf("%w: the number %s has more than %d digits or an exponent beyond ±%d", ErrTooCostly, cut, MaxNumberDigits, MaxNumberDigits)
		}
	}
	return nil
}

func numberInBounds(n string) bool {
	mant, exp, hasExp := strings.Cut(strings.ToLower(n), "e")
	digits := 0
	for _, r := range mant {
		if r >= '0' && r <= '9' {
			digits++
		}
	}
	if digits > MaxNumberDigits {
		return false
	}
	if !hasExp {
		return true
	}
	e, err := strconv.Atoi(exp)
	return err == nil && e >= -MaxNumberDigits && e <= MaxNumberDigits
}

type selfContained struct{}

func (selfContained) Load(string) (any, error) {
	return nil, errors.New("a schema must be self-contained: a $ref may name only its own #/$defs, not another document")
}

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
func Message(e *jsonschema.ValidationError) string {
	return e.ErrorKind.LocalizedString(english)
}

// Pointer is e's location as a JSON pointer ("/" for the document).
func Pointer(e *jsonschema.ValidationError) string {
	return "/" + strings.Join(e.InstanceLocation, "/")
}

// Problems are a validation error's problems as sorted lines
// "/pointer: what", each once.
func Problems(ve *jsonschema.ValidationError) []string {
	var out []string
	for _, e := range Leaves(ve) {
		out = append(out, Pointer(e)+": "+Message(e))
	}
	slices.Sort(out)
	return slices.Compact(out)
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
