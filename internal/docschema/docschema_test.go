package docschema

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// A schema from outside names only itself: a $ref to a file of the host,
// to a device or to a FIFO (which would block the open for good) is
// refused before anything is opened, and a $ref into its own $defs works.
func TestCompileIsSelfContained(t *testing.T) {
	dir := t.TempDir()
	host := filepath.Join(dir, "host.json")
	if err := os.WriteFile(host, []byte(`{"type":"string","maxLength":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, schema, want string
	}{
		{"host file", `{"properties":{"a":{"$ref":"file://` + host + `"}}}`, "must be self-contained"},
		{"host file, fragment", `{"properties":{"a":{"$ref":"file://` + host + `#/type"}}}`, "must be self-contained"},
		{"fifo", `{"properties":{"a":{"$ref":"file://` + fifo + `"}}}`, "must be self-contained"},
		{"device", `{"$ref":"file:///dev/zero"}`, "must be self-contained"},
		{"url", `{"$ref":"https://example.invalid/s.json"}`, "must be self-contained"},
		{"relative", `{"$ref":"other.json"}`, "must be self-contained"},
		{"$id moves the base", `{"$id":"file://` + dir + `/","properties":{"a":{"$ref":"host.json"}}}`, "must be self-contained"},
		{"a meta-schema of the host", `{"$schema":"file://` + host + `","type":"object"}`, "must be self-contained"},
		{"relative, up", `{"properties":{"a":{"$ref":"../../etc/passwd"}}}`, "must be self-contained"},
		{"own defs", `{"$defs":{"s":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/s"}}}`, ""},
		{"a draft's meta-schema", `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object"}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() {
				_, err := Compile("harness:test.json", []byte(tc.schema))
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("compiling waited on a file the schema named")
			}
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// Two embedded schemas under one name are two schemas.
func TestEmbeddedKeyedByContent(t *testing.T) {
	a := Embedded("same.json", []byte(`{"type":"string"}`), "")
	b := Embedded("same.json", []byte(`{"type":"number"}`), "")
	if a == b {
		t.Fatal("the second schema of a name got the first's compilation")
	}
	if err := b.Validate(1.0); err != nil {
		t.Fatalf("the number schema refused a number: %v", err)
	}
	if Embedded("same.json", []byte(`{"type":"string"}`), "") != a {
		t.Fatal("a schema was compiled twice")
	}
}

func TestLinesAndProblems(t *testing.T) {
	s := Embedded("t.json", []byte(`{"type":"object","additionalProperties":false,
		"properties":{"n":{"type":"integer"},"p":{"oneOf":[{"required":["a"]},{"required":["b"]}]}}}`), "")
	err := s.Validate(map[string]any{"n": "x", "stray": true, "p": map[string]any{}})
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("not a validation error: %v", err)
	}
	lines := map[string]int{"n": 2, "stray": 3, "p": 4}
	lineOf := func(loc []string) int {
		if len(loc) == 0 {
			return 1
		}
		return lines[loc[len(loc)-1]]
	}
	got := strings.Join(Lines(ve, "f.yaml", lineOf, "give a or b"), "\n")
	for _, want := range []string{
		"  f.yaml:2: n: got string, want integer",
		"  f.yaml:3: the top level: additional properties 'stray' not allowed",
		"  f.yaml:4: p: give a or b",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("lines lack %q:\n%s", want, got)
		}
	}
	probs := strings.Join(Problems(ve), "\n")
	if !strings.Contains(probs, "/n: got string, want integer") {
		t.Errorf("problems:\n%s", probs)
	}
}

// A check of a value is bounded: a schema whose references multiply, or
// a number too large to compare, ends it with ErrTooCostly; an ordinary
// schema checks a large ordinary value, and a draft's own schema and
// formats still compile and check.
func TestValidateIsBounded(t *testing.T) {
	fanOut := `"d0":{"type":"object"}`
	for i := 1; i <= 40; i++ {
		fanOut += fmt.Sprintf(`,"d%d":{"allOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]}`, i, i-1, i-1)
	}
	items := make([]string, 20000)
	for i := range items {
		items[i] = fmt.Sprintf(`{"id":%d,"name":"n%d"}`, i, i)
	}
	for _, tc := range []struct {
		name, schema, value string
		want                error // nil: valid
	}{
		{"references that multiply in place", `{"$defs":{` + fanOut + `},"$ref":"#/$defs/d40"}`, `{}`, ErrTooCostly},
		{"references that multiply with the value's depth", `{"$defs":{"a":{"allOf":[{"$ref":"#/$defs/b"},{"$ref":"#/$defs/b"}]},
			"b":{"type":"object","properties":{"a":{"$ref":"#/$defs/a"}}}},"$ref":"#/$defs/a"}`, strings.Repeat(`{"a":`, 40) + `{}` + strings.Repeat(`}`, 40), ErrTooCostly},
		{"a huge exponent", `{"type":"integer"}`, `1e999999`, ErrTooCostly},
		{"a tiny exponent", `{"type":"number"}`, `1e-999999`, ErrTooCostly},
		{"an exponent past int", `{"type":"number"}`, `1e99999999999999999999`, ErrTooCostly},
		{"too many digits", `{"type":"number"}`, strings.Repeat("9", 401), ErrTooCostly},
		{"deep in an array", `{"type":"array"}`, `[[{"a":1e500}]]`, ErrTooCostly},
		{"nested past the bound", `{}`, strings.Repeat(`[`, MaxDepth+2) + strings.Repeat(`]`, MaxDepth+2), ErrTooCostly},
		{"more patterns than compile in bounded time", `{"properties":{` + func() string {
			var ps []string
			for i := range MaxPatterns + 1 {
				ps = append(ps, fmt.Sprintf(`"p%d":{"pattern":"^a%d$"}`, i, i))
			}
			return strings.Join(ps, ",")
		}() + `}}`, `{}`, ErrTooCostly},
		{"a schema nested past the bound", strings.Repeat(`{"items":`, MaxDepth+2) + `{}` + strings.Repeat(`}`, MaxDepth+2), `[]`, ErrTooCostly},
		{"float64's range", `{"type":"number","maximum":1e308}`, `1e308`, nil},
		{"20,000 items", `{"type":"array","items":{"type":"object","required":["id"],"properties":{"id":{"type":"integer"},"name":{"type":"string"}}}}`, "[" + strings.Join(items, ",") + "]", nil},
		{"a draft's schema", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"a":{"type":"string","format":"email"}}}`, `{"a":"x@example.com"}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Compile("t.json", []byte(tc.schema))
			if err != nil {
				if tc.want != nil && errors.Is(err, tc.want) {
					return // refused as it compiled
				}
				t.Fatal(err)
			}
			v, err := jsonschema.UnmarshalJSON(strings.NewReader(tc.value))
			if err != nil {
				t.Fatal(err)
			}
			err = s.Validate(v)
			switch {
			case tc.want == nil && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			// The schema serves the next check whatever ended this one.
			if err := s.Validate(map[string]any{}); err != nil && !errors.Is(err, ErrTooCostly) {
				var ve *jsonschema.ValidationError
				if !errors.As(err, &ve) {
					t.Fatalf("the next check: %v", err)
				}
			}
		})
	}
}

// What a check tells of a value that does not match stays small: at most
// MaxProblems problems and a count of the rest; a value of more than
// MaxValues values is not checked.
func TestProblemsStaySmall(t *testing.T) {
	s, err := Compile("t.json", []byte(`{"type":"array","items":{"type":"string"}}`))
	if err != nil {
		t.Fatal(err)
	}
	numbers := func(n int) any {
		v, err := jsonschema.UnmarshalJSON(strings.NewReader("[" + strings.TrimSuffix(strings.Repeat("0,", n), ",") + "]"))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	var ve *jsonschema.ValidationError
	if err := s.Validate(numbers(1000)); !errors.As(err, &ve) {
		t.Fatalf("1,000 numbers: %v", err)
	}
	probs := Problems(ve)
	if len(probs) != MaxProblems+1 || probs[MaxProblems] != "and 980 more" {
		t.Fatalf("problems: %d lines, the last %q", len(probs), probs[len(probs)-1])
	}
	if err := s.Validate(numbers(50000)); !errors.As(err, &ve) || len(Problems(ve)) != MaxProblems+1 {
		t.Fatalf("50,000 numbers: %v", err)
	}
	if err := s.Validate(numbers(MaxValues)); !errors.Is(err, ErrTooCostly) {
		t.Fatalf("%d numbers: %v", MaxValues, err)
	}
}

// Under "not" and "if" the validator asks only yes or no: references that
// multiply in place are refused as the schema compiles, and a check that
// multiplies with the value's depth is counted there too. Behind the
// count, a check past the time bound is left, and its schema checks
// nothing more.
func TestBoundsWhereStepsAreNotCounted(t *testing.T) {
	fanOut := `"d0":{"type":"string"}`
	for i := 1; i <= 40; i++ {
		fanOut += fmt.Sprintf(`,"d%d":{"anyOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]}`, i, i-1, i-1)
	}
	for _, root := range []string{`{"not":{"$ref":"#/$defs/d40"}}`, `{"if":{"$ref":"#/$defs/d40"}}`, `{"$ref":"#/$defs/d40"}`} {
		_, err := Compile("t.json", []byte(`{"$defs":{`+fanOut+`},`+root[1:]))
		if !errors.Is(err, ErrTooCostly) {
			t.Errorf("%s over references that multiply in place compiled: %v", root, err)
		}
	}

	// Two ways in at each level of the value, under "not": counted.
	s, err := Compile("t.json", []byte(`{"$defs":{"a":{"anyOf":[{"$ref":"#/$defs/b"},{"$ref":"#/$defs/b"}]},
		"b":{"type":"object","required":["a"],"properties":{"a":{"$ref":"#/$defs/a"}}}},"not":{"$ref":"#/$defs/a"}}`))
	if err != nil {
		t.Fatal(err)
	}
	deep := strings.Repeat(`{"a":`, 60) + `{}` + strings.Repeat(`}`, 60)
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(deep))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(v); !errors.Is(err, ErrTooCostly) || !strings.Contains(err.Error(), "steps") {
		t.Fatalf("a check that doubles with each level: %v", err)
	}
	if err := s.Validate(map[string]any{}); errors.Is(err, ErrTooCostly) {
		t.Fatalf("the schema's next check: %v", err)
	}

	// Behind the steps, the time: a check past it is left, and its
	// schema checks nothing more.
	defer func(d time.Duration) { checkTime = d }(checkTime)
	checkTime = time.Millisecond
	s, err = Compile("t.json", []byte(`{"type":"array","items":{"type":"object","properties":{"id":{"type":"integer"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	items := strings.TrimSuffix(strings.Repeat(`{"id":1},`, 40000), ",")
	v, err = jsonschema.UnmarshalJSON(strings.NewReader("[" + items + "]"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(v); !errors.Is(err, ErrTooCostly) || !strings.Contains(err.Error(), "ran past") {
		t.Fatalf("a check past the time: %v", err)
	}
	if err := s.Validate([]any{}); !errors.Is(err, ErrTooCostly) || !strings.Contains(err.Error(), "checks nothing more") {
		t.Fatalf("the schema checked again after a check was left: %v", err)
	}
}

// A problem with a large enum or a large value is told in a few words.
func TestMessagesStaySmall(t *testing.T) {
	var values []string
	for i := range 1000 {
		values = append(values, fmt.Sprintf(`"value-%d"`, i))
	}
	for _, tc := range []struct{ schema, value, want string }{
		{`{"enum":[` + strings.Join(values, ",") + `]}`, `"other"`, "the value is not one of the 1000 the schema lists"},
		{`{"enum":["a","b"]}`, `"` + strings.Repeat("x", 5000) + `"`, "the value is not one of the 2 the schema lists"},
		{`{"const":"a"}`, `{"big":"` + strings.Repeat("x", 5000) + `"}`, "the value is not the one the schema requires"},
		{`{"enum":["a","b"]}`, `"c"`, "value must be one of 'a', 'b'"},
	} {
		s, err := Compile("t.json", []byte(tc.schema))
		if err != nil {
			t.Fatal(err)
		}
		v, _ := jsonschema.UnmarshalJSON(strings.NewReader(tc.value))
		var ve *jsonschema.ValidationError
		if !errors.As(s.Validate(v), &ve) {
			t.Fatalf("%s matched", tc.schema[:20])
		}
		if got := strings.Join(Problems(ve), "; "); !strings.Contains(got, tc.want) || len(got) > 400 {
			t.Errorf("problems %q, want %q", got, tc.want)
		}
	}
}
