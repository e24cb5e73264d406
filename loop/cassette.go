package loop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"sync"

	"github.com/harness-dev/harness/artifacts"
)

const cassetteEntryType = "harness.cassette-entry"

// CassetteEntry is one line of a cassette: a request, by its key, and the
// response the model gave.
type CassetteEntry struct {
	artifacts.Envelope
	Key      artifacts.Digest `json:"key"`
	Request  Request          `json:"request"`
	Response Response         `json:"response"`
}

// canonical returns req in the form that is digested and recorded: tool
// schemas compacted, so formatting never changes a key.
func canonical(req Request) (Request, error) {
	out := req
	out.Tools = make([]ToolSpec, len(req.Tools))
	for i, t := range req.Tools {
		var buf bytes.Buffer
		if len(t.Parameters) > 0 {
			if err := json.Compact(&buf, t.Parameters); err != nil {
				return out, fmt.Errorf("tool %s: parameters: %w", t.Name, err)
			}
		}
		t.Parameters = buf.Bytes()
		out.Tools[i] = t
	}
	if out.Messages == nil {
		out.Messages = []Message{}
	}
	return out, nil
}

// RequestKey digests what determines a model's answer: model, messages,
// tools and generation parameters. Transport settings are not in it.
func RequestKey(req Request) (artifacts.Digest, error) {
	c, err := canonical(req)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("request key: %w", err)
	}
	return artifacts.DigestBytes(b), nil
}

// Recorder is a Model that forwards to another and appends every
// successful exchange to a cassette, one fsynced line each.
type Recorder struct {
	inner Model
	mu    sync.Mutex
	f     *os.File
}

// NewRecorder creates the cassette at path. An existing non-empty file is
// refused rather than truncated: it may be the only copy of a recording.
func NewRecorder(inner Model, path string) (*Recorder, error) {
	if fi, err := os.Stat(path); err == nil && fi.Size() > 0 {
		return nil, fmt.Errorf("%s already exists: choose another path or delete it first", path)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create cassette: %w", err)
	}
	return &Recorder{inner: inner, f: f}, nil
}

// Complete forwards req and records the exchange.
func (r *Recorder) Complete(ctx context.Context, req Request) (Response, error) {
	resp, err := r.inner.Complete(ctx, req)
	if err != nil {
		return resp, err
	}
	c, err := canonical(req)
	if err != nil {
		return resp, err
	}
	key, err := RequestKey(req)
	if err != nil {
		return resp, err
	}
	line, err := json.Marshal(CassetteEntry{Envelope: artifacts.NewEnvelope(cassetteEntryType, 1), Key: key, Request: c, Response: resp})
	if err != nil {
		return resp, fmt.Errorf("record exchange: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.f.Write(append(line, '\n')); err != nil {
		return resp, fmt.Errorf("record exchange: %w", err)
	}
	if err := r.f.Sync(); err != nil {
		return resp, fmt.Errorf("record exchange: %w", err)
	}
	return resp, nil
}

// Close closes the cassette file.
func (r *Recorder) Close() error { return r.f.Close() }

// Cassette is a Model that serves recorded responses and never touches the
// network.
type Cassette struct {
	mu         sync.Mutex
	embeddings map[artifacts.Digest][][]float64
	entries    []storedEntry
	used       []bool
	served     int
	keys       KeyCache
}

// storedEntry is a cassette entry as held for replay: matching needs only
// the key, so the recorded request (the whole conversation so far, which
// makes a long cassette quadratic in its turns) stays undecoded until a
// mismatch has to be explained.
type storedEntry struct {
	Key      artifacts.Digest `json:"key"`
	Request  json.RawMessage  `json:"request"`
	Response Response         `json:"response"`
}

// OpenCassette reads a cassette written by a Recorder.
func OpenCassette(path string) (*Cassette, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadCassette(f)
}

// ReadCassette parses cassette lines from r.
func ReadCassette(r io.Reader) (*Cassette, error) {
	c := &Cassette{embeddings: map[artifacts.Digest][][]float64{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 256<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var e struct {
			artifacts.Envelope
			storedEntry
		}
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("cassette line %d: %w", n, err)
		}
		if e.Type == cassetteEmbeddingType && e.Version == 1 {
			var em EmbeddingEntry
			if err := json.Unmarshal(line, &em); err != nil {
				return nil, fmt.Errorf("cassette line %d: %w", n, err)
			}
			c.embeddings[em.Key] = em.Vectors
			continue
		}
		if e.Type != cassetteEntryType || e.Version != 1 {
			return nil, fmt.Errorf("cassette line %d: type %q version %d, want %s version 1", n, e.Type, e.Version, cassetteEntryType)
		}
		c.entries = append(c.entries, e.storedEntry)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read cassette: %w", err)
	}
	c.used = make([]bool, len(c.entries))
	return c, nil
}

// Complete serves the first unused recording of req. Identical requests
// are served in recorded order.
func (c *Cassette) Complete(ctx context.Context, req Request) (Response, error) {
	if err := ctx.Err(); err != nil {
		return Response{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	key, err := c.keys.Key(req)
	if err != nil {
		return Response{}, err
	}
	pos := c.served
	c.served++
	for i, e := range c.entries {
		if !c.used[i] && e.Key == key {
			c.used[i] = true
			return e.Response, nil
		}
	}
	mm := &CassetteMismatchError{Request: pos + 1, Recorded: len(c.entries)}
	if pos < len(c.entries) {
		creq, _ := canonical(req)
		var recorded Request
		if err := json.Unmarshal(c.entries[pos].Request, &recorded); err != nil {
			mm.Field = fmt.Sprintf("the recorded request does not parse (%v)", err)
		} else {
			mm.Field = firstDifference(recorded, creq)
		}
	}
	return Response{}, mm
}

// CassetteMismatchError is a replayed request that the cassette does not
// hold. Field names the first difference from the recording at the same
// position.
type CassetteMismatchError struct {
	Request  int // 1-based position of the request in the run
	Recorded int // how many exchanges the cassette holds
	Field    string
}

func (e *CassetteMismatchError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("replay: request %d is not in the cassette, which holds %d exchanges: the run asked the model more than the recording did; record it again", e.Request, e.Recorded)
	}
	return fmt.Sprintf("replay: request %d does not match the cassette: %s; the inputs changed since recording (prompt, skills, tools or harness version): record it again", e.Request, e.Field)
}

// IsCassetteMismatch reports whether err is a replay mismatch.
func IsCassetteMismatch(err error) bool {
	var m *CassetteMismatchError
	return errors.As(err, &m)
}

// firstDifference names the first field, in request order, where got
// differs from want.
func firstDifference(want, got Request) string {
	if want.Model != got.Model {
		return "model differs"
	}
	if len(want.Tools) != len(got.Tools) {
		return fmt.Sprintf("tools (recorded %d, got %d)", len(want.Tools), len(got.Tools))
	}
	for i := range want.Tools {
		w, g := want.Tools[i], got.Tools[i]
		switch {
		case w.Name != g.Name:
			return fmt.Sprintf("tools[%d].name differs", i)
		case w.Description != g.Description:
			return fmt.Sprintf("tools[%d].description differs", i)
		case !sameJSON(w.Parameters, g.Parameters):
			return fmt.Sprintf("tools[%d].parameters differs", i)
		}
	}
	if d := paramsDifference(want.Params, got.Params); d != "" {
		return d
	}
	n := min(len(want.Messages), len(got.Messages))
	for i := 0; i < n; i++ {
		w, g := want.Messages[i], got.Messages[i]
		switch {
		case w.Role != g.Role:
			return fmt.Sprintf("messages[%d].role differs", i)
		case w.Content != g.Content:
			return fmt.Sprintf("messages[%d].content differs", i)
		case w.ToolCallID != g.ToolCallID:
			return fmt.Sprintf("messages[%d].toolCallId differs", i)
		case len(w.ToolCalls) != len(g.ToolCalls):
			return fmt.Sprintf("messages[%d].toolCalls (recorded %d, got %d)", i, len(w.ToolCalls), len(g.ToolCalls))
		}
		for j := range w.ToolCalls {
			wc, gc := w.ToolCalls[j], g.ToolCalls[j]
			switch {
			case wc.ID != gc.ID:
				return fmt.Sprintf("messages[%d].toolCalls[%d].id differs", i, j)
			case wc.Name != gc.Name:
				return fmt.Sprintf("messages[%d].toolCalls[%d].name differs", i, j)
			case wc.Arguments != gc.Arguments:
				return fmt.Sprintf("messages[%d].toolCalls[%d].arguments differs", i, j)
			}
		}
	}
	if len(want.Messages) != len(got.Messages) {
		return fmt.Sprintf("messages (recorded %d, got %d)", len(want.Messages), len(got.Messages))
	}
	return "the request differs"
}

func paramsDifference(w, g Params) string {
	eqF := func(a, b *float64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
	switch {
	case !eqF(w.Temperature, g.Temperature):
		return "params.temperature differs"
	case !eqF(w.TopP, g.TopP):
		return "params.topP differs"
	case (w.Seed == nil) != (g.Seed == nil) || (w.Seed != nil && *w.Seed != *g.Seed):
		return "params.seed differs"
	case w.MaxCompletionTokens != g.MaxCompletionTokens:
		return "params.maxCompletionTokens differs"
	}
	return ""
}

// sameJSON compares two JSON texts by value: a recording re-encodes what
// it stores (escaping "<", ">" and "&", for one), so equal schemas need
// not be equal bytes.
func sameJSON(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
