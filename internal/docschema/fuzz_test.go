package docschema

import (
	"errors"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// A schema from outside (an MCP server's, a skill's) is compiled and used
// without a panic whatever it holds, its problems are told as lines, and
// no $ref in it reaches past it.
func FuzzCompile(f *testing.F) {
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"type":"string","pattern":"^(a+)+$"}}}`,
		`{"$defs":{"s":{"$ref":"#/$defs/s"}},"$ref":"#/$defs/s"}`,
		`{"$ref":"file:///etc/passwd"}`,
		`{"$id":"file:///","$ref":"etc/passwd"}`,
		`{"allOf":[{"$ref":"#"}]}`,
		`{"type":"integer","multipleOf":1e-308}`,
		`{"enum":[1,2,3],"const":{"a":[]}}`,
		`{"format":"regex","pattern":"\\p{Greek}"}`,
		`{"$dynamicRef":"#x","$dynamicAnchor":"x"}`,
		`{"oneOf":[{"required":["a"]},{"required":["b"]}],"additionalProperties":false}`,
	} {
		f.Add(s, `{"a":"aaaaaaaaaaaaaaaaaaaaaaaaaaaa!"}`)
	}
	f.Fuzz(func(t *testing.T, schema, doc string) {
		s, err := Compile("fuzz.json", []byte(schema))
		if err != nil {
			var le *jsonschema.LoadURLError
			if errors.As(err, &le) && !strings.Contains(err.Error(), "must be self-contained") {
				t.Fatalf("a document was looked for past the loader: %v", err)
			}
			return
		}
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(doc))
		if err != nil {
			return
		}
		var ve *jsonschema.ValidationError
		if errors.As(s.Validate(v), &ve) {
			if len(Problems(ve)) == 0 {
				t.Fatal("a failed validation told no problem")
			}
			Lines(ve, "f", func([]string) int { return 1 }, "one of")
		}
	})
}
