package run

import (
	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
)

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
		OnAttempt: func(a loop.Attempt) {
			r.event(record.EventModelRetry, a)
		},
	})
	if r.opts.Record == "" {
		return m, func() {}, nil
	}
	rec, err := loop.NewRecorder(m, r.opts.Record)
	if err != nil {
		return nil, nil, outcome.Usage("cassette_invalid", "--record %s: %v", r.opts.Record, err)
	}
	return rec, func() { rec.Close() }, nil
}
