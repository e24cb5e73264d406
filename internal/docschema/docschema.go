// Package docschema holds what harness does with JSON Schemas: its own
// embedded schemas compiled once, schemas from outside compiled without
// reaching past the document and checking values within a bound of steps
// and number sizes, and a validation error told as lines a person can act
// on.
package docschema

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
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

type selfContained struct{}

func (selfContained) Load(string) (any, error) {
	return nil, errors.New("a schema must be self-contained: a $ref may name only its own #/$defs, not another document")
}
