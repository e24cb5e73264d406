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
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

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
	// Its numbers become exact fractions as it compiles, as a value's do
	// as it is checked.
	if err := checkValue(doc); err != nil {
		return nil, err
	}
	if err := patternsBounded(doc); err != nil {
		return nil, err
	}
	out := &Schema{}
	c := jsonschema.NewCompiler()
	c.UseLoader(selfContained{})
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
	if err := inPlaceBounded(out.s); err != nil {
		return nil, err
	}
	if err := out.countSteps(); err != nil {
		return nil, err
	}
	return out, nil
}

// MaxPatterns and MaxPatternBytes bound the regular expressions of a
// schema ("pattern" values and "patternProperties" keys): each is checked
// against the meta-schema and compiled as the schema compiles, about a
// millisecond or more apiece, on the goroutine that adds a run's tools.
const (
	MaxPatterns     = 256
	MaxPatternBytes = 64 << 10
)

// patternsBounded refuses a schema document past MaxPatterns or
// MaxPatternBytes. It counts every "pattern" that holds a string and
// every key of a "patternProperties", wherever they stand: a count that
// errs high is a refusal a person can read, one that errs low a compile
// of unbounded time.
func patternsBounded(doc any) error {
	n, size := 0, 0
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				switch p := e.(type) {
				case string:
					if k == "pattern" {
						n, size = n+1, size+len(p)
					}
				case map[string]any:
					if k == "patternProperties" {
						for re := range p {
							n, size = n+1, size+len(re)
						}
					}
				}
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(doc)
	if n > MaxPatterns || size > MaxPatternBytes {
		return fmt.Errorf("%w: it holds %d regular expressions of %d bytes, more than the %d or %d KiB harness compiles", ErrTooCostly, n, size, MaxPatterns, MaxPatternBytes>>10)
	}
	return nil
}

// MaxSteps bounds the evaluations of (sub)schemas one check of a value
// makes. A schema is a graph: parts that refer to each other make a few
// hundred bytes whose check of a small value takes 2^n steps, and the
// validator has no bound or cancellation of its own. A legitimate check
// makes a few steps per value of the document. Every evaluation of a
// part that applies anything further is counted (countSteps).
const MaxSteps = 1 << 18

// MaxInPlace bounds how many schemas apply to one value through one
// schema in place ($ref, allOf, anyOf, oneOf, not, if, then, else,
// dependentSchemas), each counted as often as it is reached.
const MaxInPlace = 1 << 12

// MaxCheckTime bounds one check's wall time, behind the step count. A
// check past it is left to end on its own, and its schema checks nothing
// more: the validator cannot be stopped from outside.
const MaxCheckTime = 30 * time.Second

// checkTime is MaxCheckTime; a test shortens it.
var checkTime = MaxCheckTime

// ErrTooCostly is a check that passed MaxSteps or MaxCheckTime, a schema
// past MaxInPlace, or a document past MaxValues or MaxNumberDigits.
var ErrTooCostly = errors.New("too costly to check")

// Schema is a compiled schema from outside, checked within bounds. Checks
// of one Schema run one at a time (they share its step count).
type Schema struct {
	s         *jsonschema.Schema
	mu        sync.Mutex
	steps     int
	abandoned atomic.Bool
}

type overBudget struct{}

// step counts one evaluation of a part of the schema, of the given
// weight.
func (s *Schema) step(weight int) {
	s.steps += weight
	if s.steps > MaxSteps {
		// Unwinds the validator, which recovers nothing, to check.
		panic(overBudget{})
	}
}

// countSteps makes every part of the compiled schema count its
// evaluations. The validator has no hook of its own that every
// evaluation reaches: it checks a part's "format" on every evaluation
// that got past "type", "const" and "enum", including those made only
// for a yes or no (under "not" and "if"), so each part gets one (wrapping
// the format it had). What it does not count is a part that failed one of
// those three, which applies nothing further. A $dynamicRef or
// $recursiveRef that resolves by the scope of the check may reach a part
// no walk of the schema finds, so a schema from outside may not use one.
func (s *Schema) countSteps() error {
	var err error
	walkParts(s.s, func(p *jsonschema.Schema) bool {
		if (p.DynamicRef != nil && p.DynamicRef.Anchor != "") || p.RecursiveRef != nil {
			err = fmt.Errorf("%s uses $dynamicRef or $recursiveRef, which a schema harness did not write may not use: name the part with $ref", p.Location)
			return false
		}
		orig := p.Format
		name := "harness-step"
		if orig != nil {
			name = orig.Name
		}
		w := weight(p)
		p.Format = &jsonschema.Format{Name: name, Validate: func(v any) error {
			s.step(w)
			if orig != nil {
				return orig.Validate(v)
			}
			return nil
		}}
		return true
	})
	return err
}

// weight is what one evaluation of p costs at most beyond itself: a
// failed "required" (or dependentRequired) keeps the list of every name
// missing, so a list of 40,000 names checked against as many objects had
// held gigabytes.
func weight(p *jsonschema.Schema) int {
	w := 1 + len(p.Required)
	for _, names := range p.DependentRequired {
		w += len(names)
	}
	for _, d := range p.Dependencies {
		if names, ok := d.([]string); ok {
			w += len(names)
		}
	}
	return w
}

// walkParts calls f on every part of the schema at root once, until f
// says to stop.
func walkParts(root *jsonschema.Schema, f func(*jsonschema.Schema) bool) {
	seen := map[*jsonschema.Schema]bool{}
	var walk func(p *jsonschema.Schema) bool
	walk = func(p *jsonschema.Schema) bool {
		if p == nil || seen[p] {
			return true
		}
		seen[p] = true
		if !f(p) {
			return false
		}
		for _, c := range append(inPlaceParts(p), descentParts(p)...) {
			if !walk(c) {
				return false
			}
		}
		return true
	}
	walk(root)
}

// Validate checks v (as jsonschema.UnmarshalJSON decodes it): nil, a
// *jsonschema.ValidationError, or an error wrapping ErrTooCostly.
func (s *Schema) Validate(v any) error {
	if err := checkValue(v); err != nil {
		return err
	}
	if s.abandoned.Load() {
		return fmt.Errorf("%w: a check against this schema ran past %v and was left; it checks nothing more", ErrTooCostly, checkTime)
	}
	done := make(chan error, 1)
	go func() { done <- s.check(v) }()
	timer := time.NewTimer(checkTime)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		s.abandoned.Store(true)
		return fmt.Errorf("%w: checking it against the schema ran past %v (a schema whose references multiply, or a value too large for it)", ErrTooCostly, checkTime)
	}
}

// check runs one check under the step count.
func (s *Schema) check(v any) (err error) {
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

// inPlaceBounded refuses a schema any of whose parts has more than
// MaxInPlace schemas applying in place, each counted as often as it is
// reached (so $defs that each refer twice to the one before count 2^n).
// A part that refers back to itself in place counts once there: the
// validator stops such a cycle.
func inPlaceBounded(root *jsonschema.Schema) error {
	weight := map[*jsonschema.Schema]int{}
	const visiting = -1
	var inPlace func(s *jsonschema.Schema) int
	inPlace = func(s *jsonschema.Schema) int {
		if s == nil {
			return 0
		}
		switch w, ok := weight[s]; {
		case ok && w == visiting:
			return 1
		case ok:
			return w
		}
		weight[s] = visiting
		w := 1
		for _, c := range inPlaceParts(s) {
			w = min(w+inPlace(c), MaxInPlace+1)
		}
		weight[s] = w
		return w
	}
	var err error
	walkParts(root, func(p *jsonschema.Schema) bool {
		if inPlace(p) > MaxInPlace {
			err = fmt.Errorf("%w: more than %d schemas apply to one value through %s (its references multiply)", ErrTooCostly, MaxInPlace, p.Location)
			return false
		}
		return true
	})
	return err
}

// inPlaceParts are the schemas that apply to the same value as s.
func inPlaceParts(s *jsonschema.Schema) []*jsonschema.Schema {
	out := []*jsonschema.Schema{s.Ref, s.RecursiveRef, s.Not, s.If, s.Then, s.Else}
	if s.DynamicRef != nil {
		out = append(out, s.DynamicRef.Ref)
	}
	out = append(out, s.AllOf...)
	out = append(out, s.AnyOf...)
	out = append(out, s.OneOf...)
	for _, k := range slices.Sorted(maps.Keys(s.DependentSchemas)) {
		out = append(out, s.DependentSchemas[k])
	}
	for _, k := range slices.Sorted(maps.Keys(s.Dependencies)) {
		if d, ok := s.Dependencies[k].(*jsonschema.Schema); ok {
			out = append(out, d)
		}
	}
	return out
}

// descentParts are the schemas that apply to the values inside s's.
func descentParts(s *jsonschema.Schema) []*jsonschema.Schema {
	out := []*jsonschema.Schema{s.PropertyNames, s.UnevaluatedProperties, s.Contains, s.Items2020, s.UnevaluatedItems, s.ContentSchema}
	for _, k := range slices.Sorted(maps.Keys(s.Properties)) {
		out = append(out, s.Properties[k])
	}
	for _, p := range s.PatternProperties {
		out = append(out, p)
	}
	out = append(out, s.PrefixItems...)
	for _, a := range []any{s.AdditionalProperties, s.Items, s.AdditionalItems} {
		switch x := a.(type) {
		case *jsonschema.Schema:
			out = append(out, x)
		case []*jsonschema.Schema:
			out = append(out, x...)
		}
	}
	return out
}

// MaxProblems is how many problems Problems tells; the rest are counted.
const MaxProblems = 20

// MaxNumberDigits bounds a number's digits and the size of its exponent.
// The validator compares numbers as exact fractions (math/big): 1e999999
// is nine bytes of JSON and a million digits to compare, tens of
// milliseconds each. No value a tool or an answer means needs more than
// float64's range.
const MaxNumberDigits = 400

// MaxValues bounds the values (objects, arrays, strings, numbers,
// booleans, nulls) of a document checked against a schema. The library
// allocates for every value it checks, and keeps a problem for each that
// fails: a model's 400 KB of arguments of 200,000 numbers where strings
// are wanted took hundreds of MiB.
const MaxValues = 1 << 17

// MaxDepth bounds the nesting of a document checked against a schema,
// and of a schema: the compiler's time grows faster than the nesting (a
// schema nested 2,000 deep took 14 s), and no tool's arguments or answer
// nest this deep.
const MaxDepth = 128

// checkValue refuses a document of more than MaxValues values, nested
// past MaxDepth, or holding a number past MaxNumberDigits.
func checkValue(v any) error {
	return CheckDocument(v, MaxValues)
}

// CheckDocument refuses a document from outside, as decoded by
// jsonschema.UnmarshalJSON, that holds more than maxValues values, nests
// past MaxDepth or holds a number past MaxNumberDigits, before a schema
// of harness's own (Embedded) checks it: the validator compares numbers
// as exact fractions whoever wrote the schema.
func CheckDocument(v any, maxValues int) error {
	n := 0
	return walkValue(v, &n, maxValues, 0)
}

func walkValue(v any, n *int, maxValues, depth int) error {
	if *n++; *n > maxValues {
		return fmt.Errorf("%w: it holds more than %d values", ErrTooCostly, maxValues)
	}
	if depth > MaxDepth {
		return fmt.Errorf("%w: it nests more than %d deep", ErrTooCostly, MaxDepth)
	}
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			if err := walkValue(e, n, maxValues, depth+1); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range x {
			if err := walkValue(e, n, maxValues, depth+1); err != nil {
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
