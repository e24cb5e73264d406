package run

import (
	"context"
	"errors"

	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
)

// fallback is the primary model until it fails with an outage after its
// retries; from then on every request goes to the fallback model on the
// same endpoint (a retry at once, then the rest of the run).
type fallback struct {
	primary  loop.Model
	name     string
	switched func(error)
	using    bool
}

func (f *fallback) Complete(ctx context.Context, req loop.Request) (loop.Response, error) {
	if !f.using {
		resp, err := f.primary.Complete(ctx, req)
		var pe *loop.ProviderError
		if err == nil || !errors.As(err, &pe) || !pe.Retryable {
			return resp, err
		}
		f.using = true
		f.switched(err)
	}
	req.Model = f.name
	return f.primary.Complete(ctx, req)
}

// model builds the model the loop talks to: a cassette player for
// --replay, otherwise the OpenAI-compatible provider, wrapped in a recorder
// for --record. A child run is handed its parent's model.
func (r *runner) model() (loop.Model, func(), error) {
	if r.opts.model != nil {
		return r.opts.model, func() {}, nil
	}
	if r.opts.Replay != "" {
		p, err := loop.OpenCassette(r.opts.Replay)
		if err != nil {
			return nil, nil, outcome.Usage("cassette_invalid", "--replay %s: %v", r.opts.Replay, err)
		}
		return p, func() {}, nil
	}
	retry := loop.RetryPolicy{RequestTimeout: r.opts.RequestTimeout, MaxDelay: r.opts.RetryMaxWait}
	if r.opts.MaxRetries != nil {
		retry.MaxAttempts = *r.opts.MaxRetries + 1
	}
	var m loop.Model = loop.NewOpenAI(loop.OpenAIConfig{
		BaseURL: r.opts.BaseURL,
		APIKey:  r.opts.APIKey,
		Retry:   retry,
		Stream:  r.opts.Stream,
		OnAttempt: func(a loop.Attempt) {
			r.event(record.EventModelRetry, a)
		},
	})
	if r.opts.FallbackModel != "" {
		m = &fallback{primary: m, name: r.opts.FallbackModel, switched: func(err error) {
			r.fellBack = true
			r.event(record.EventModelFallback, map[string]string{"from": r.opts.Model, "to": r.opts.FallbackModel, "error": err.Error()})
			r.progress("model %s failed after its retries (%v); continuing with --fallback-model %s", r.opts.Model, err, r.opts.FallbackModel)
		}}
	}
	if r.opts.Record == "" {
		return m, func() {}, nil
	}
	rec, err := loop.NewRecorder(m, r.opts.Record)
	if err != nil {
		return nil, nil, outcome.Usage("cassette_invalid", "--record %s: %v", r.opts.Record, err)
	}
	return rec, func() { rec.Close() }, nil
}
