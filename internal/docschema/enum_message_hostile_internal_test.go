package docschema

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/testenv"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Message tells an enum's problem in a few words when the enum has more
// than 16 values or the value is large, but not when the enum's own
// values are large: 16 values of 64 KB (a 1 MB schema, an eval check's
// or an MCP tool's) and 100,000 short items that each fail make Problems
// build a 1 MB sentence per item before cutting each to 300 bytes, 100 GB
// of copying after Validate has returned, outside its time bound, on the
// caller's goroutine (the loop's, which --timeout cannot end).
func TestProblemsOfAnEnumOfLargeValuesStayCheap(t *testing.T) {
	if !testenv.InBoundedChild(t, 20*time.Second, "telling 100,000 problems with an enum of 16 values of 64 KB") {
		return
	}
	var want []string
	for i := range 16 {
		want = append(want, fmt.Sprintf(`"%d%s"`, i, strings.Repeat("w", 64<<10)))
	}
	s, err := Compile("t.json", []byte(`{"type":"object","properties":{"x":{"items":{"enum":[`+strings.Join(want, ",")+`]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(`{"x":[` + strings.Repeat(`"a",`, 100000-1) + `"a"]}`))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var ve *jsonschema.ValidationError
	if err := s.Validate(v); !errors.As(err, &ve) {
		t.Fatalf("Validate: %v", err)
	}
	checked := time.Since(start)
	lines := Problems(ve)
	if told := time.Since(start) - checked; told > 5*time.Second {
		t.Fatalf("Validate took %v, then Problems %v for %d lines", checked, told, len(lines))
	}
}
