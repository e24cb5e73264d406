package loop

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/loop/wire"
)

// Embedder turns texts into vectors through an OpenAI-compatible
// /embeddings API. Models that can embed (OpenAI, Recorder, Cassette)
// implement it besides Model.
type Embedder interface {
	Embed(ctx context.Context, model string, inputs []string) ([][]float64, error)
}

// Embed asks the endpoint for one vector per input, in input order.
func (m *OpenAI) Embed(ctx context.Context, model string, inputs []string) ([][]float64, error) {
	if len(inputs) == 0 {
		return nil, nil
	}
	if m.badBase != nil {
		return nil, &ProviderError{Message: m.badBase.Error(), Model: model, Endpoint: m.shown}
	}
	body, err := json.Marshal(wire.EmbeddingsRequest{Model: model, Input: inputs})
	if err != nil {
		return nil, err
	}
	// Bounded by the request timeout as a model request is, so that an
	// endpoint that never answers does not hold find_skills; asked once,
	// since find_skills ranks without vectors when they do not come.
	once := m.retry
	once.MaxAttempts = 1
	var out [][]float64
	err = once.do(ctx, m.on, model, m.shown, func(ctx context.Context) error {
		var resp wire.Embeddings
		if err := m.client.Post(ctx, wire.EmbeddingsPath, body, &resp); err != nil {
			return err
		}
		out, err = vectors(resp, len(inputs))
		return err
	})
	return out, err
}

// vectors puts an answer's vectors in input order: one per input, each
// index once, none empty.
func vectors(resp wire.Embeddings, n int) ([][]float64, error) {
	if len(resp.Data) != n {
		return nil, &ProviderError{Message: fmt.Sprintf("embeddings: asked for %d vectors, got %d", n, len(resp.Data)), Answered: true}
	}
	out := make([][]float64, n)
	for _, d := range resp.Data {
		switch {
		case d.Index < 0 || d.Index >= int64(n):
			return nil, &ProviderError{Message: fmt.Sprintf("embeddings: index %d out of range", d.Index), Answered: true}
		case out[d.Index] != nil:
			return nil, &ProviderError{Message: fmt.Sprintf("embeddings: index %d given twice", d.Index), Answered: true}
		case len(d.Embedding) == 0:
			return nil, &ProviderError{Message: fmt.Sprintf("embeddings: the vector of index %d is empty", d.Index), Answered: true}
		}
		out[d.Index] = d.Embedding
	}
	return out, nil
}

const cassetteEmbeddingType = "harness.cassette-embedding"

// EmbeddingEntry is one embeddings exchange in a cassette.
type EmbeddingEntry struct {
	artifacts.Envelope
	Key     artifacts.Digest `json:"key"`
	Model   string           `json:"model"`
	Inputs  []string         `json:"inputs"`
	Vectors [][]float64      `json:"vectors"`
}

// EmbeddingKey digests what determines the vectors: the model and the
// inputs in order.
func EmbeddingKey(model string, inputs []string) artifacts.Digest {
	b, _ := json.Marshal(struct {
		M string   `json:"model"`
		I []string `json:"inputs"`
	}{model, inputs})
	return artifacts.DigestBytes(b)
}

// Embed forwards to the recorded model and appends the exchange.
func (r *Recorder) Embed(ctx context.Context, model string, inputs []string) ([][]float64, error) {
	e, ok := r.inner.(Embedder)
	if !ok {
		return nil, fmt.Errorf("embeddings: the model behind the recorder cannot embed")
	}
	vs, err := e.Embed(ctx, model, inputs)
	if err != nil {
		return nil, err
	}
	return vs, r.RecordEmbedding(model, inputs, vs)
}

// Unwrap is the model the recorder forwards to.
func (r *Recorder) Unwrap() Model { return r.inner }

// RecordEmbedding appends an embeddings exchange served from elsewhere (a
// cache), so that a replay of the run has every vector it used.
func (r *Recorder) RecordEmbedding(model string, inputs []string, vs [][]float64) error {
	line, err := json.Marshal(EmbeddingEntry{Envelope: artifacts.NewEnvelope(cassetteEmbeddingType, 1), Key: EmbeddingKey(model, inputs), Model: model, Inputs: inputs, Vectors: vs})
	if err != nil {
		return err
	}
	// The key stays that of the inputs as given: a replay embeds the same
	// texts, whatever the line shows of them.
	if err := r.write(line); err != nil {
		return fmt.Errorf("record embeddings: %w", err)
	}
	return nil
}

// Embed serves recorded vectors; embeddings are deterministic, so one
// recording answers the same request any number of times.
func (c *Cassette) Embed(ctx context.Context, model string, inputs []string) ([][]float64, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	key := EmbeddingKey(model, inputs)
	c.mu.Lock()
	defer c.mu.Unlock()
	if vs, ok := c.embeddings[key]; ok {
		return vs, nil
	}
	return nil, fmt.Errorf("replay: the embeddings request (%s, %d inputs: %s) is not in the cassette; record it again", model, len(inputs), wire.Shorten(strings.Join(slices.Clip(inputs[:min(len(inputs), 3)]), " | ")))
}
