package docschema

import (
	"fmt"
	"strings"
	"testing"
)

// inPlaceBounded follows a $dynamicRef to its initial target only. At
// check time the validator goes instead to the outermost schema resource
// in scope with that $dynamicAnchor: here an embedded resource "e" gives
// each anchor a trivial schema (what the compile-time count sees), and
// the root resource gives it a level that reaches the one below twice, so
// 2^40 schemas apply to {} in place and the schema compiles. The step
// count refuses the check after 262,144 steps (1 to 2 s); the promise is
// that such a schema is refused as it compiles.
func TestDynamicRefFanOutIsRefusedAtCompile(t *testing.T) {
	const n = 40
	defs := []string{`"H0":{"$dynamicAnchor":"a0","type":"string"}`}
	for i := 1; i <= n; i++ {
		defs = append(defs, fmt.Sprintf(`"H%d":{"$dynamicAnchor":"a%d","anyOf":[{"$ref":"e#/$defs/r%d"},{"$ref":"e#/$defs/r%d"}]}`, i, i, i-1, i-1))
	}
	var edefs []string
	for i := 0; i < n; i++ {
		edefs = append(edefs, fmt.Sprintf(`"r%d":{"$dynamicRef":"#a%d"},"L%d":{"$dynamicAnchor":"a%d"}`, i, i, i, i))
	}
	defs = append(defs, `"E":{"$id":"e","$defs":{`+strings.Join(edefs, ",")+`}}`)
	src := `{"$defs":{` + strings.Join(defs, ",") + `},"$ref":"#/$defs/H40"}`
	if _, err := Compile("t.json", []byte(src)); err == nil {
		t.Fatalf("2^%d schemas applying in place through $dynamicRef compiled: %v", n, err)
	}
}
