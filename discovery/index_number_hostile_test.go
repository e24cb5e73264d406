package discovery

import (
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/testenv"
)

// An index comes from a server the operator named, not from harness. Its
// "version" is checked against the embedded schema's const, and the
// validator compares numbers as exact fractions: a version of a few
// million digits (within MaxIndexBytes) takes minutes of CPU to convert,
// the bound docschema keeps for schemas from outside (MaxNumberDigits)
// is not applied to documents checked against harness's own schemas.
func TestIndexWithAHugeNumberIsRefusedQuickly(t *testing.T) {
	if !testenv.InBoundedChild(t, 20*time.Second, "an index whose version has millions of digits") {
		return
	}
	data := `{"type":"harness.skill-index","version":1` + strings.Repeat("0", 4<<20) + `,"skills":[]}`
	_, err := Parse([]byte(data))
	if err == nil || !strings.Contains(err.Error(), "too costly to check") {
		t.Fatalf("an index whose version has millions of digits: %v", err)
	}
}
