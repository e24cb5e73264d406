package docschema

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

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
