package run

import (
	"os"
	"testing"

	"github.com/harness-dev/harness/scripts"
)

// TestMain lets the test binary act as the Landlock helper, as the harness
// binary does, for skill scripts run under the landlock backend.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == scripts.HelperArg {
		os.Exit(scripts.HelperMain(os.Args[2:]))
	}
	os.Exit(m.Run())
}
