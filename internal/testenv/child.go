package testenv

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// InBoundedChild runs the calling test again in a child process and gives
// it limit: true in the child, which then does the work (and exits when
// the test returns), false in the parent, which fails the test when the
// child fails or outlives limit (then killed), so that work a library
// cannot be told to stop does not keep a core busy for the rest of the
// package. what names the work in the failure.
func InBoundedChild(t *testing.T, limit time.Duration, what string) bool {
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
