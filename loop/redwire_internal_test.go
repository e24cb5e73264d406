package loop

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/harness-dev/harness/loop/wire"
)

// TestRedWireRetryAfterOverflow: a server that asks for a wait too long
// for a time.Duration (retry-after-ms or Retry-After seconds that overflow
// when multiplied) has it wrap to a negative delay: harness retries at
// once, where it should wait the longest it waits (--retry-max-wait).
func TestRedWireRetryAfterOverflow(t *testing.T) {
	p := RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 30 * time.Second}.withDefaults()
	for _, h := range []http.Header{
		{"Retry-After-Ms": {"9223372036854775807"}},
		{"Retry-After": {"9223372037"}},
		{"Retry-After": {"99999999999999999"}},
	} {
		err := &wire.APIError{StatusCode: 429, Message: "slow down", Header: h}
		if d := p.delay(1, errors.Join(err)); d < time.Second {
			t.Errorf("header %v: delay %v; the server asked for longer than the %v cap", h, d, p.MaxDelay)
		}
	}
}
