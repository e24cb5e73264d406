package docschema

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// A check that runs past the time bound is "left to end on its own", but
// one whose uncounted work doubles with each level of a small value (two
// ways in at each level, under "not") never ends: Validate returns, and a
// core of the host stays busy for the life of the process, one more for
// each such schema (each MCP tool of a server, each task of a batch).
// Nothing the model, the server or the schema's author sends may keep
// harness's CPU after the bound that refused it.
func TestLeftCheckKeepsNoCoreBusy(t *testing.T) {
	if !inBoundedChild(t, 30*time.Second, "a check left past its time bound") {
		return
	}
	checkTime = 200 * time.Millisecond
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
	if err := s.Validate(v); !errors.Is(err, ErrTooCostly) {
		t.Fatalf("the check was not bounded: %v", err)
	}
	before := cpu(t)
	time.Sleep(2 * time.Second)
	if used := cpu(t) - before; used > 500*time.Millisecond {
		t.Fatalf("%v of CPU used in the 2 s after Validate returned ErrTooCostly: the left check still runs", used)
	}
}

func cpu(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// inBoundedChild runs the test in a child process killed at limit, so a
// check that never ends keeps no core busy once the test has failed.
func inBoundedChild(t *testing.T, limit time.Duration, what string) bool {
	t.Helper()
	const env = "HARNESS_TEST_BOUNDED_CHILD"
	if os.Getenv(env) == t.Name() {
		return true
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), env+"="+t.Name())
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v\n%s", what, err, out.String())
		}
		t.Log(out.String())
	case <-time.After(limit):
		cmd.Process.Kill()
		<-done
		t.Fatalf("%s took more than %s: refuse it, or bound the work", what, limit)
	}
	return false
}
