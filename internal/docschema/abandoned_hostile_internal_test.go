package docschema

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/testenv"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// A check whose work doubles with each level of a small value (two ways
// in at each level, under "not", which the validator evaluates only for a
// yes or no) is counted there too, and ends by its step count: were it
// only left at the time bound, it would keep a core busy for the life of
// the process, one more for each such schema (each MCP tool of a server,
// each task of a batch).
func TestLeftCheckKeepsNoCoreBusy(t *testing.T) {
	if !testenv.InBoundedChild(t, 60*time.Second, "a check whose work doubles with each level under not") {
		return
	}
	s, err := Compile("t.json", []byte(`{"$defs":{"h":{"type":"object",
		"properties":{"a":{"$ref":"#/$defs/h"}},
		"patternProperties":{"^a$":{"$ref":"#/$defs/h"}}}},
		"not":{"$ref":"#/$defs/h"}}`))
	if err != nil {
		t.Fatal(err)
	}
	deep := strings.Repeat(`{"a":`, 60) + `"x"` + strings.Repeat(`}`, 60)
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(deep))
	if err != nil {
		t.Fatal(err)
	}
	// Ended by its step count, the check has returned: nothing of it is
	// left running (a check left at the time bound says "ran past").
	if err := s.Validate(v); !errors.Is(err, ErrTooCostly) || !strings.Contains(err.Error(), "steps") {
		t.Fatalf("the check was not ended by its step count: %v", err)
	}
}
