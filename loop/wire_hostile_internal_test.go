package loop

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/loop/wire"
)

// TestWireRetryAfterOverflow: a server that asks for a wait too long
// for a time.Duration (retry-after-ms or Retry-After seconds that would
// overflow when multiplied) gets the longest wait harness makes
// (--retry-max-wait), never a wrapped, negative one.
func TestWireRetryAfterOverflow(t *testing.T) {
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

// TestWireHostileGzipBomb: a body the transport inflates is bounded as
// inflated, streamed or not.
func TestWireHostileGzipBomb(t *testing.T) {
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	zw.Write([]byte(`{"choices":[{"index":0,"message":{"content":"`))
	zw.Write(make([]byte, 0)) // keep the header
	chunk := bytes.Repeat([]byte("a"), 1<<20)
	for i := 0; i < 8; i++ {
		zw.Write(chunk)
	}
	zw.Close()
	for _, stream := range []bool{false, true} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(zipped.Bytes())
		}))
		m := NewOpenAI(OpenAIConfig{BaseURL: srv.URL + "/v1", Stream: stream, Retry: RetryPolicy{MaxAttempts: 1}, maxBody: 1 << 20})
		_, err := m.Complete(context.Background(), Request{Model: "m", Messages: []Message{{Role: RoleUser, Content: "x"}}})
		srv.Close()
		if err == nil || !strings.Contains(err.Error(), "too much") {
			t.Errorf("stream %v: %v", stream, err)
		}
	}
}
