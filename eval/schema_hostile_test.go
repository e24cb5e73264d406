package eval

import (
	"fmt"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/docschema"
	"github.com/harness-dev/harness/internal/testenv"
)

// An eval's schema check is the eval author's (or, for a SkillForge
// draft held to --forge-min-pass-rate, the model's own): it may not reach
// the disk, and it may not hold the grading either. $defs that each refer
// twice to the one before make a 4 KB schema whose check of {} costs 2^60
// steps: grading must refuse such a schema, or bound the check, rather
// than never end.
func TestCheckSchemaValidationIsBoundedUnderRefFanOut(t *testing.T) {
	defs := `"d0":{"type":"object"}`
	for i := 1; i <= 60; i++ {
		defs += fmt.Sprintf(`,"d%d":{"allOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]}`, i, i-1, i-1)
	}
	schema := []byte(`{"$defs":{` + defs + `},"$ref":"#/$defs/d60"}`)
	if _, err := docschema.Compile("check.schema.json", schema); err != nil {
		return // refused when the eval file is read: held
	}
	if testenv.InBoundedChild(t, 3*time.Second, "grading {} against a 4 KB check schema") {
		schemaValid(schema, []byte(`{}`), "the answer")
	}
}
