package run

import (
	"os"
	"testing"

	"github.com/harness-dev/harness/scripts"
)

// TestMain lets the test binary act as the Landlock helper, as the harness
// binary does, for skill scripts run under the landlock backend.
func TestMain(m *testing.M) {
	if code, ok := scripts.HelperDispatch(os.Args); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}
