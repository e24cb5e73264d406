package run

import (
	"context"
	"errors"

	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/store"
)

// model builds the model the loop talks to: a cassette player for
// --replay, otherwise the OpenAI-compatible provider, wrapped in a recorder
// for --record. A child run is handed its parent's model.
func (r *runner) model() (loop.Model, func(), error) {
	if r.lin.model != nil {
		return r.lin.model, func() {}, nil
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
		m = &loop.Fallback{Primary: m, Model: r.opts.FallbackModel, Switched: func(err error) {
			r.fellBack = true
			r.event(record.EventModelFallback, map[string]string{"from": r.opts.Model, "to": r.opts.FallbackModel, "error": err.Error()})
			r.progress("model %s failed after its retries (%v); continuing with --fallback-model %s", r.opts.Model, err, r.opts.FallbackModel)
		}}
	}
	if r.opts.Record == "" {
		return m, func() {}, nil
	}
	rec, err := loop.NewRecorder(m, r.opts.Record, r.redact)
	if err != nil {
		return nil, nil, outcome.Usage("cassette_invalid", "--record %s: %v", r.opts.Record, err)
	}
	return rec, func() { rec.Close() }, nil
}

// embedder is find_skills' semantic stage: --embedding-model's vectors,
// taken from the embedding cache where it has them, asked of the endpoint
// otherwise, and recorded whole in a cassette being recorded, so that a
// replay has every vector the run used (and needs no cache). nil without
// --embedding-model.
func (r *runner) embedder(m loop.Model) func(ctx context.Context, texts []string) ([][]float64, error) {
	model := r.opts.EmbeddingModel
	if model == "" {
		return nil
	}
	if c, ok := m.(*loop.Cassette); ok {
		return func(ctx context.Context, texts []string) ([][]float64, error) { return c.Embed(ctx, model, texts) }
	}
	rec, recording := m.(*loop.Recorder)
	if recording {
		m = rec.Unwrap()
	}
	cache := store.EmbeddingCache{Dir: r.opts.EmbeddingCache}
	return func(ctx context.Context, texts []string) ([][]float64, error) {
		e, ok := m.(loop.Embedder)
		if !ok {
			return nil, errors.New("embeddings: the model cannot embed")
		}
		out := make([][]float64, len(texts))
		var miss []string
		var at []int
		for i, t := range texts {
			if v, ok := cache.Get(model, t); ok {
				out[i] = v
			} else {
				miss, at = append(miss, t), append(at, i)
			}
		}
		if len(miss) > 0 {
			vs, err := e.Embed(ctx, model, miss)
			if err != nil {
				return nil, err
			}
			for j, v := range vs {
				out[at[j]] = v
				cache.Put(model, miss[j], v) // a failed write is a later miss
			}
		}
		r.event(record.EventEmbeddings, record.Embeddings{Model: model, Inputs: len(texts), Embedded: len(miss)})
		if recording {
			if err := rec.RecordEmbedding(model, texts, out); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
}
