package loop

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"time"

	"github.com/harness-dev/harness/loop/wire"
)

// RetryPolicy bounds how transient provider failures are retried. Zero
// fields take the defaults: 4 attempts, 500ms base delay, 30s cap.
type RetryPolicy struct {
	MaxAttempts int
	BaseDelay   time.Duration
	MaxDelay    time.Duration
	// RequestTimeout bounds one attempt (0 = 5 minutes): a server that
	// never answers must not hang a CI job.
	RequestTimeout time.Duration
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = 4
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = 500 * time.Millisecond
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = 30 * time.Second
	}
	if p.RequestTimeout <= 0 {
		p.RequestTimeout = 5 * time.Minute
	}
	return p
}

// Attempt records one failed attempt to reach the model. Attempts are
// transport detail: journaled, never part of the run identity.
type Attempt struct {
	Attempt int    `json:"attempt"`
	Status  int    `json:"status,omitempty"`
	Error   string `json:"error"`
	DelayMs int64  `json:"delayMs"`
	GiveUp  bool   `json:"giveUp"`
}

// do runs call until it succeeds, fails permanently, the budget is spent,
// or ctx ends. Context errors are returned as they are, never as provider
// errors, so the caller can tell an interrupt from an outage.
//
// Every ProviderError it reports or returns names model and endpoint, so
// that an attempt line says what was asked where.
func (p RetryPolicy) do(ctx context.Context, on func(Attempt), model, endpoint string, call func(context.Context) error) error {
	named := func(err error, n int, transient bool) *ProviderError {
		pe := providerError(err, n, transient)
		pe.Model, pe.Endpoint = model, endpoint
		return pe
	}
	for n := 1; ; n++ {
		callCtx, cancel := context.WithTimeout(ctx, p.RequestTimeout)
		err := call(callCtx)
		timedOut := callCtx.Err() == context.DeadlineExceeded
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if timedOut {
			err = &ProviderError{Message: fmt.Sprintf("no answer within the request timeout (%s, --request-timeout)", p.RequestTimeout)}
		}
		status, transient := classify(err)
		if timedOut {
			transient = true
		}
		last := !transient || n >= p.MaxAttempts
		delay := time.Duration(0)
		if !last {
			delay = p.delay(n, err)
		}
		if on != nil {
			on(Attempt{Attempt: n, Status: status, Error: named(err, n, transient).Error(), DelayMs: delay.Milliseconds(), GiveUp: last})
		}
		if last {
			return named(err, n, transient)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// delay is exponential in the attempt number, or what the server asked
// for with Retry-After, never more than MaxDelay.
func (p RetryPolicy) delay(attempt int, err error) time.Duration {
	d := p.BaseDelay << (attempt - 1)
	if d <= 0 || d > p.MaxDelay {
		d = p.MaxDelay
	}
	// Jitter, so that many runs that failed together do not come back
	// together: up to a quarter of the delay either way.
	if d > 0 {
		d += time.Duration(rand.Int64N(int64(d)/2+1)) - d/4
	}
	var header http.Header
	var api *wire.APIError
	var re *wire.ReportedError
	switch {
	case errors.As(err, &api):
		header = api.Header
	case errors.As(err, &re):
		header = re.Header
	}
	if header != nil {
		if ms, err := strconv.ParseInt(header.Get("retry-after-ms"), 10, 64); err == nil && ms >= 0 {
			// Bounded before it is multiplied: a wait too long for a
			// Duration must not wrap round to a negative one.
			d = time.Duration(min(ms, p.MaxDelay.Milliseconds()+1)) * time.Millisecond
		} else if ra, ok := retryAfter(header.Get("Retry-After"), time.Now()); ok {
			d = ra
		}
	}
	return min(d, p.MaxDelay)
}

func retryAfter(v string, now time.Time) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil && s >= 0 {
		// Past a year the wait is as good as for ever, and no multiple
		// of a second wraps round.
		return time.Duration(min(s, 365*24*3600)) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// classify says whether err is worth another attempt: rate limits, server
// errors and connections that broke mid-way are; everything the request
// itself got wrong is not.
func classify(err error) (status int, transient bool) {
	var api *wire.APIError
	if errors.As(err, &api) {
		s := api.StatusCode
		return s, s == http.StatusTooManyRequests || s == http.StatusRequestTimeout || s == http.StatusConflict || s >= 500
	}
	var re *wire.ReportedError
	if errors.As(err, &re) {
		return 0, transientCode(re.Code)
	}
	var de *wire.DecodeError
	if errors.As(err, &de) {
		return 0, de.Cut
	}
	var te *transientError
	if errors.As(err, &te) {
		return 0, true
	}
	var pe *ProviderError
	if errors.As(err, &pe) {
		return pe.Status, false
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) {
		return 0, true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return 0, true
	}
	return 0, false
}
