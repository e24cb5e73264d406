package discovery

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// An index comes from a server the operator named, not from harness. Its
// "version" is checked against the embedded schema's const, and the
// validator compares numbers as exact fractions: a version of a few
// million digits (within MaxIndexBytes) takes minutes of CPU to convert,
// the bound docschema keeps for schemas from outside (MaxNumberDigits)
// is not applied to documents checked against harness's own schemas.
func TestIndexWithAHugeNumberIsRefusedQuickly(t *testing.T) {
	if !boundedChild(t, 20*time.Second, "an index whose version has millions of digits") {
		return
	}
	data := `{"type":"harness.skill-index","version":1` + strings.Repeat("0", 4<<20) + `,"skills":[]}`
	start := time.Now()
	_, err := Parse([]byte(data))
	if err == nil {
		t.Fatal("an index whose version is not 1 was accepted")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Parse took %v", d)
	}
}

// boundedChild runs the test in a child process killed at limit, so a
// check that does not end keeps no core busy once the test has failed.
func boundedChild(t *testing.T, limit time.Duration, what string) bool {
	t.Helper()
	const env = "HARNESS_TEST_BOUNDED_CHILD"
	if os.Getenv(env) == t.Name() {
		return true
	}
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
			t.Fatalf("%s: the child failed: %v", what, err)
		}
	case <-time.After(limit):
		cmd.Process.Kill()
		<-done
		t.Fatalf("%s took more than %s: refuse it, or bound the work", what, limit)
	}
	return false
}
