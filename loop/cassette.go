package loop

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
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
	if out.WireAPI == WireChat {
		out.WireAPI = ""
	}
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
	return canonicalKey(c)
}

// canonicalKey is RequestKey of a request canonical has already made.
func canonicalKey(c Request) (artifacts.Digest, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("request key: %w", err)
	}
	return artifacts.DigestBytes(b), nil
}

// Recorder is a Model that forwards to another and appends every
// successful exchange to a cassette, one fsynced line each.
type Recorder struct {
	inner  Model
	redact *artifacts.Redactor
	mu     sync.Mutex
	f      *os.File
}

// NewRecorder creates the cassette at path. An existing non-empty file is
// refused rather than truncated: it may be the only copy of a recording.
// Every line goes through redact (the run's, nil for none), as every
// artifact of a run does: a model that repeats the API key does not put it
// in a file that is shared and checked in.
func NewRecorder(inner Model, path string, redact *artifacts.Redactor) (*Recorder, error) {
	if fi, err := os.Stat(path); err == nil && fi.Size() > 0 {
		return nil, fmt.Errorf("%s already exists: choose another path or delete it first", path)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create cassette: %w", err)
	}
	return &Recorder{inner: inner, redact: redact, f: f}, nil
}

// Complete forwards req and records the exchange. The key is that of the
// request as recorded, redacted: a replay serves the redacted answer, so
// its next request holds "[redacted]" where the recording's conversation
// held the key, and the two keys agree.
func (r *Recorder) Complete(ctx context.Context, req Request) (Response, error) {
	resp, err := r.inner.Complete(ctx, req)
	if err != nil {
		return resp, err
	}
	c, err := canonical(req)
	if err != nil {
		return resp, err
	}
	b, err := json.Marshal(c)
	if err != nil {
		return resp, fmt.Errorf("request key: %w", err)
	}
	key := artifacts.DigestBytes(r.redact.Bytes(b))
	line, err := json.Marshal(CassetteEntry{Envelope: artifacts.NewEnvelope(cassetteEntryType, 1), Key: key, Request: c, Response: resp})
	if err != nil {
		return resp, fmt.Errorf("record exchange: %w", err)
	}
	if err := r.write(line); err != nil {
		return resp, fmt.Errorf("record exchange: %w", err)
	}
	return resp, nil
}

// write appends one redacted line and makes it durable.
func (r *Recorder) write(line []byte) error {
	line = append(r.redact.Bytes(line), '\n')
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.f.Write(line); err != nil {
		return err
	}
	return r.f.Sync()
}

// Close closes the cassette file.
func (r *Recorder) Close() error { return r.f.Close() }

// Cassette is a Model that serves recorded responses and never touches the
// network.
type Cassette struct {
	mu         sync.Mutex
	path       string
	embeddings map[artifacts.Digest][][]float64
	entries    []storedEntry
	used       []bool
	served     int
	keys       KeyCache
}

// storedEntry is a cassette entry as held for replay. Matching needs only
// the key, and a recorded request is the whole conversation so far (a long
// cassette is quadratic in its turns), so the request is not kept: where
// it lies in the file is, and it is read again only when a mismatch has to
// be explained. A line whose request could not be cut out (see
// cutRequest) keeps its copy.
type storedEntry struct {
	Key      artifacts.Digest `json:"key"`
	Request  json.RawMessage  `json:"request"`
	Response Response         `json:"response"`
	// reqAt and reqLen place the request in the file when Request is nil.
	reqAt  int64
	reqLen int
}

// storedLine is a cassette line as it is first decoded.
type storedLine struct {
	artifacts.Envelope
	storedEntry
}

// OpenCassette reads a cassette written by a Recorder.
func OpenCassette(path string) (*Cassette, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	c := &Cassette{path: path, embeddings: map[artifacts.Digest][][]float64{}}
	// One buffer for every line: the file is read once, front to back,
	// and none of it is kept (fresh memory costs more here than parsing).
	br := bufio.NewReaderSize(f, 256<<10)
	var buf []byte
	var at int64
	for n := 1; ; n++ {
		line, err := readLine(br, buf[:0], maxCassetteLine)
		buf = line
		if errors.Is(err, errLineTooLong) {
			return nil, fmt.Errorf("cassette line %d is longer than %d MiB: not a cassette harness wrote", n, maxCassetteLine>>20)
		}
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("read cassette: %w", err)
		}
		if len(line) == 0 && err == io.EOF {
			break
		}
		lineAt := at
		at += int64(len(line))
		if derr := c.add(n, line, lineAt); derr != nil {
			return nil, derr
		}
		if err == io.EOF {
			break
		}
	}
	c.used = make([]bool, len(c.entries))
	return c, nil
}

// maxCassetteLine bounds one recorded exchange. A request carries the
// whole conversation, so a long run's lines are megabytes; a line beyond
// this (a stream with no newline, /dev/zero) would only fill memory.
const maxCassetteLine = 64 << 20

var errLineTooLong = errors.New("line too long")

// readLine appends the next line of br, newline included, to buf, and
// fails once the line is longer than max.
func readLine(br *bufio.Reader, buf []byte, max int) ([]byte, error) {
	for {
		frag, err := br.ReadSlice('\n')
		buf = append(buf, frag...)
		if len(buf) > max {
			return buf, errLineTooLong
		}
		if err != bufio.ErrBufferFull {
			return buf, err
		}
	}
}

// add decodes line n of the cassette, which starts at byte at of the file.
func (c *Cassette) add(n int, raw []byte, at int64) error {
	lead := skipSpace(raw, 0)
	line := bytes.TrimRight(raw[lead:], " \t\r\n")
	if len(line) == 0 {
		return nil
	}
	var e storedLine
	span, err := decodeStored(line, &e)
	if err != nil {
		return fmt.Errorf("cassette line %d: %w", n, err)
	}
	if e.Type == cassetteEmbeddingType && e.Version == 1 {
		var em EmbeddingEntry
		if err := json.Unmarshal(line, &em); err != nil {
			return fmt.Errorf("cassette line %d: %w", n, err)
		}
		c.embeddings[em.Key] = em.Vectors
		return nil
	}
	if e.Type != cassetteEntryType || e.Version != 1 {
		return fmt.Errorf("cassette line %d: type %q version %d, want %s version 1", n, e.Type, e.Version, cassetteEntryType)
	}
	if span[1] > 0 {
		e.reqAt, e.reqLen = at+int64(lead+span[0]), span[1]-span[0]
	}
	c.entries = append(c.entries, e.storedEntry)
	return nil
}

// recordedRequest is entry i's request as recorded.
func (c *Cassette) recordedRequest(i int) ([]byte, error) {
	e := c.entries[i]
	if e.Request != nil {
		return e.Request, nil
	}
	f, err := os.Open(c.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, e.reqLen)
	if _, err := f.ReadAt(b, e.reqAt); err != nil {
		return nil, fmt.Errorf("read it again: %w", err)
	}
	return b, nil
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
	if i := slices.Index(c.used, false); i >= 0 && c.matchesRedacted(i, req) {
		c.used[i] = true
		return c.entries[i].Response, nil
	}
	mm := &CassetteMismatchError{Request: pos + 1, Recorded: len(c.entries)}
	if pos < len(c.entries) {
		creq, _ := canonical(req)
		var recorded Request
		raw, err := c.recordedRequest(pos)
		if err == nil {
			err = json.Unmarshal(raw, &recorded)
		}
		if err != nil {
			mm.Field = fmt.Sprintf("the recorded request does not parse (%v)", err)
		} else {
			mm.Field = firstDifference(recorded, creq)
			mm.RecordedWire, mm.Wire = cmp.Or(recorded.WireAPI, WireChat), cmp.Or(creq.WireAPI, WireChat)
		}
	}
	return Response{}, mm
}

// matchesRedacted reports whether req is the next recorded request once
// what the recording redacted is left out: a secret the recording run
// knew (its API key, read from a file by a tool) was written as
// "[redacted]", and a replay without that key sends it as it is. Each
// "[redacted]" stands for a non-empty run of one JSON string's text.
func (c *Cassette) matchesRedacted(i int, req Request) bool {
	raw, err := c.recordedRequest(i)
	if err != nil || !bytes.Contains(raw, []byte(artifacts.Redacted)) {
		return false
	}
	creq, err := canonical(req)
	if err != nil {
		return false
	}
	got, err := json.Marshal(creq)
	if err != nil {
		return false
	}
	parts := bytes.Split(raw, []byte(artifacts.Redacted))
	if !bytes.HasPrefix(got, parts[0]) {
		return false
	}
	rest := got[len(parts[0]):]
	for j, part := range parts[1:] {
		n := stringSpan(rest)
		last := j == len(parts)-2
		found := false
		// The shortest span after which the recording goes on.
		for k := 1; k <= n; k++ {
			if last && bytes.Equal(rest[k:], part) || !last && bytes.HasPrefix(rest[k:], part) {
				rest, found = rest[k+len(part):], true
				break
			}
		}
		if !found {
			return false
		}
	}
	return len(rest) == 0
}

// stringSpan is how many bytes of b lie inside the JSON string text it
// starts in: up to an unescaped quote.
func stringSpan(b []byte) int {
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return len(b)
}

// CassetteMismatchError is a replayed request that the cassette does not
// hold. Field names the first difference from the recording at the same
// position.
type CassetteMismatchError struct {
	Request  int // 1-based position of the request in the run
	Recorded int // how many exchanges the cassette holds
	Field    string
	// RecordedWire and Wire, when they differ, are the wire APIs of the
	// recording and of the run.
	RecordedWire, Wire string
}

func (e *CassetteMismatchError) Error() string {
	if e.RecordedWire != e.Wire {
		return fmt.Sprintf("replay: the cassette was recorded over the %s wire API and this run uses %s: replay it with --wire-api %s, or record it again", e.RecordedWire, e.Wire, e.RecordedWire)
	}
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
	if want.WireAPI != got.WireAPI {
		return "wireApi differs"
	}
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
		case len(w.Reasoning) != len(g.Reasoning) || !slices.EqualFunc(w.Reasoning, g.Reasoning, func(x, y ReasoningItem) bool { return x.Digest == y.Digest }):
			return fmt.Sprintf("messages[%d].reasoning differs", i)
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
