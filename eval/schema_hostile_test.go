package eval

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/docschema"
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
	const env = "HARNESS_TEST_BOUNDED_CHILD"
	if os.Getenv(env) == t.Name() {
		schemaValid(schema, []byte(`{}`), "the answer")
		return
	}
	// The check runs in a child process, killed at the limit: the library
	// cannot be told to stop, and a core kept busy would slow every test
	// after this one.
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env+"="+t.Name())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the child failed: %v", err)
		}
	case <-time.After(3 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatal("a 4 KB check schema held the grading of {} for more than 3 s: refuse it at load or bound the check")
	}
}
