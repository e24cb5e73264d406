package store

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/harness-dev/harness/artifacts"
)

// EmbeddingCache keeps embedding vectors on disk by model and by the digest
// of the text embedded (a skill's name and description), so a second run
// over the same skills embeds nothing new. A corrupt or unreadable entry
// is a miss, never an error: the vector is asked for again.
type EmbeddingCache struct {
	Dir string
}

var unsafeModel = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func (c EmbeddingCache) path(model, text string) string {
	d := strings.TrimPrefix(string(artifacts.DigestString(model+"\x00"+text)), "blake3:")
	return filepath.Join(c.Dir, unsafeModel.ReplaceAllString(model, "_"), d[:2], d+".json")
}

type cachedVector struct {
	artifacts.Envelope
	Model  string    `json:"model"`
	Text   string    `json:"textDigest"`
	Vector []float64 `json:"vector"`
}

// Get returns the cached vector for text, if any.
func (c EmbeddingCache) Get(model, text string) ([]float64, bool) {
	if c.Dir == "" {
		return nil, false
	}
	b, err := os.ReadFile(c.path(model, text))
	if err != nil {
		return nil, false
	}
	var v cachedVector
	if json.Unmarshal(b, &v) != nil || v.Model != model || v.Text != string(artifacts.DigestString(text)) || len(v.Vector) == 0 {
		return nil, false
	}
	return v.Vector, true
}

// Put stores a vector (atomically; a failure only costs a later miss).
func (c EmbeddingCache) Put(model, text string, vec []float64) error {
	if c.Dir == "" {
		return nil
	}
	p := c.path(model, text)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return artifacts.WriteJSON(p, cachedVector{Envelope: artifacts.NewEnvelope("harness.embedding", 1), Model: model, Text: string(artifacts.DigestString(text)), Vector: vec})
}
