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
// is a miss, never an error: the vector is asked for again. A cache
// directory another user could write is not used at all (whoever writes
// it decides which skill find_skills ranks first), and an entry is read
// by its descriptor, bounded.
type EmbeddingCache struct {
	Dir string
}

var unsafeModel = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// maxEmbeddingEntry bounds one cached vector as read: thousands of
// numbers, far under it.
const maxEmbeddingEntry = 4 << 20

// private says whether the cache directory may be used: this user's,
// written by nobody else.
func (c EmbeddingCache) private() bool {
	return artifacts.PrivateDir(c.Dir, "embedding cache", "--embedding-cache") == nil
}

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
	if !c.private() {
		return nil, false
	}
	b, err := artifacts.ReadRegular(c.path(model, text), maxEmbeddingEntry)
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
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return err
	}
	if err := artifacts.PrivateDir(c.Dir, "embedding cache", "--embedding-cache"); err != nil {
		return err
	}
	p := c.path(model, text)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	return artifacts.WriteJSON(p, cachedVector{Envelope: artifacts.NewEnvelope("harness.embedding", 1), Model: model, Text: string(artifacts.DigestString(text)), Vector: vec})
}
