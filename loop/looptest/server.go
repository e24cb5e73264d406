// Package looptest serves scripted OpenAI-compatible model answers over
// real HTTP on loopback, for tests that drive the real client end to end:
// the same script answers Chat Completions (/chat/completions) and the
// Responses API (/responses), plain or streamed. It records every request
// it receives so tests can assert what the model was sent.
package looptest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"unicode"
)

// Reply is one scripted response, served in order.
type Reply struct {
	// Content is the assistant text of a successful reply.
	Content string `json:"content,omitempty"`
	// ToolCalls, when set, make the reply a tool-call turn.
	ToolCalls []Call `json:"toolCalls,omitempty"`
	// Status, when not 0 or 200, makes the reply an API error with that
	// HTTP status; RetryAfter sets the Retry-After header.
	Status     int    `json:"status,omitempty"`
	RetryAfter string `json:"retryAfter,omitempty"`
	// Body, with Status, is the error body as sent (any shape: plain
	// text, HTML, another JSON layout), with ContentType.
	Body        string `json:"body,omitempty"`
	ContentType string `json:"contentType,omitempty"`
	// NoUsage leaves usage out of the reply, as some servers do.
	NoUsage bool `json:"noUsage,omitempty"`
	// Reasoning is sent as reasoning_content, as vLLM and DeepSeek do; over
	// the Responses API, as a reasoning item with this summary and an
	// opaque encrypted_content the client must send back unchanged.
	Reasoning string `json:"reasoning,omitempty"`
	// Refusal makes the reply a refusal with this text.
	Refusal string `json:"refusal,omitempty"`
	// Usage overrides the default token counts (10 prompt, 5 completion).
	Usage *Usage `json:"usage,omitempty"`
	// FinishReason overrides the finish reason ("stop", or "tool_calls"
	// when ToolCalls is set), e.g. "length" for a truncated answer. Over
	// the Responses API, "length" and "content_filter" make the response
	// incomplete for max_output_tokens and content_filter.
	FinishReason string `json:"finishReason,omitempty"`
	// Cut ends a streamed reply where a dropped connection would: after
	// the message and its tool calls, before the finish reason and [DONE]
	// (over the Responses API, before response.completed).
	Cut bool `json:"cut,omitempty"`
	// Hang makes the server hold the request until the client gives up,
	// to exercise timeouts and interrupts without sleeping.
	Hang bool `json:"hang,omitempty"`
	// Expect are texts the request's messages must contain (decoded, so
	// JSON escaping does not matter). A request that lacks one is answered
	// 400 naming it: a model that never looks at what it is sent would let
	// an empty task or a lost tool result pass.
	Expect []string `json:"expect,omitempty"`
}

// Call is a scripted tool call.
type Call struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Usage is a scripted token count.
type Usage struct {
	Prompt     int64 `json:"prompt"`
	Completion int64 `json:"completion"`
	Cached     int64 `json:"cached"`
	Reasoning  int64 `json:"reasoning"`
}

// Request is one request the server received.
type Request struct {
	Path   string
	Header http.Header
	Body   json.RawMessage
}

// Server is a running fake provider.
type Server struct {
	URL string
	srv *httptest.Server

	mu       sync.Mutex
	replies  []Reply
	next     int
	requests []Request
	// embedded counts the texts /embeddings was asked to embed.
	embedded int
	// issued are the reasoning items sent over /responses, by id, as
	// sent: one that comes back changed is refused.
	issued map[string]string
}

// New starts a server that answers /chat/completions with replies in order.
// When the script runs out it answers 400 with a message saying so.
func New(replies []Reply) *Server {
	s := &Server{replies: replies}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	s.URL = s.srv.URL + "/v1"
	return s
}

// Close stops the server, releasing any hanging request.
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Requests returns a copy of the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/v1/embeddings" {
		s.embed(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.requests = append(s.requests, Request{Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	var rep *Reply
	if s.next < len(s.replies) {
		rep = &s.replies[s.next]
		s.next++
	}
	n := s.next
	s.mu.Unlock()

	if r.URL.Path != "/v1/chat/completions" && r.URL.Path != "/v1/responses" {
		writeError(w, http.StatusNotFound, "not_found", "fake server only serves /v1/chat/completions and /v1/responses, got "+r.URL.Path)
		return
	}
	if rep == nil {
		writeError(w, http.StatusBadRequest, "script_exhausted", fmt.Sprintf("fake server: no scripted reply for request %d", n+1))
		return
	}
	if missing := lacking(body, rep.Expect); missing != "" {
		writeError(w, http.StatusBadRequest, "expectation_failed", fmt.Sprintf("fake server: request %d lacked %q", n, missing))
		return
	}
	if rep.Hang {
		<-r.Context().Done()
		return
	}
	if rep.Status != 0 && rep.Status != http.StatusOK {
		if rep.RetryAfter != "" {
			w.Header().Set("Retry-After", rep.RetryAfter)
		}
		if rep.Body != "" {
			ct := rep.ContentType
			if ct == "" {
				ct = "text/plain"
			}
			w.Header().Set("Content-Type", ct)
			w.WriteHeader(rep.Status)
			io.WriteString(w, rep.Body)
			return
		}
		writeError(w, rep.Status, "scripted_error", fmt.Sprintf("scripted status %d", rep.Status))
		return
	}
	stream := bytes.Contains(body, []byte(`"stream":true`))
	if r.URL.Path == "/v1/responses" {
		if msg := s.altered(body); msg != "" {
			writeError(w, http.StatusBadRequest, "invalid_reasoning_item", msg)
			return
		}
		resp := s.response(n, rep)
		if stream {
			writeEvents(w, resp, rep.Cut)
			return
		}
		writeJSON(w, http.StatusOK, resp)
		return
	}
	c := completion(n, rep)
	if stream {
		writeStream(w, c, rep.Cut)
		return
	}
	writeJSON(w, http.StatusOK, c)
}

// writeStream sends a completion as server-sent events, the way streaming
// endpoints do: the message in a delta chunk, then the finish reason, then
// usage in a chunk of its own, then [DONE].
func writeStream(w http.ResponseWriter, c map[string]any, cut bool) {
	w.Header().Set("Content-Type", "text/event-stream")
	choice := c["choices"].([]any)[0].(map[string]any)
	msg := choice["message"].(map[string]any)
	delta := map[string]any{"role": "assistant", "content": msg["content"]}
	if r, ok := msg["reasoning_content"]; ok {
		delta["reasoning_content"] = r
	}
	if r, ok := msg["refusal"]; ok {
		delta["refusal"] = r
	}
	if calls, ok := msg["tool_calls"].([]map[string]any); ok {
		var ds []map[string]any
		for i, tc := range calls {
			d := map[string]any{"index": i, "id": tc["id"], "type": "function", "function": tc["function"]}
			ds = append(ds, d)
		}
		delta["tool_calls"] = ds
	}
	chunk := func(choices []any, usage any) {
		ch := map[string]any{"id": c["id"], "object": "chat.completion.chunk", "created": 0, "model": c["model"], "choices": choices}
		if usage != nil {
			ch["usage"] = usage
		}
		b, _ := json.Marshal(ch)
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	chunk([]any{map[string]any{"index": 0, "delta": delta}}, nil)
	if cut {
		return
	}
	chunk([]any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": choice["finish_reason"]}}, nil)
	if u, ok := c["usage"]; ok {
		chunk([]any{}, u)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// lacking returns the first expected text that no message contains: the
// messages of a chat completion, or the messages and tool outputs of a
// Responses input.
func lacking(body []byte, expect []string) string {
	var req struct {
		Messages []struct {
			Content any `json:"content"`
		} `json:"messages"`
		Input []struct {
			Content any `json:"content"`
			Output  any `json:"output"`
		} `json:"input"`
	}
	json.Unmarshal(body, &req)
	var all strings.Builder
	add := func(v any) {
		switch c := v.(type) {
		case nil:
			return
		case string:
			all.WriteString(c)
		default:
			b, _ := json.Marshal(c)
			all.Write(b)
		}
		all.WriteByte('\n')
	}
	for _, m := range req.Messages {
		add(m.Content)
	}
	for _, it := range req.Input {
		add(it.Content)
		add(it.Output)
	}
	for _, e := range expect {
		if !strings.Contains(all.String(), e) {
			return e
		}
	}
	return ""
}

func completion(n int, rep *Reply) map[string]any {
	msg := map[string]any{"role": "assistant", "content": rep.Content}
	if rep.Refusal != "" {
		msg["refusal"] = rep.Refusal
	}
	if rep.Reasoning != "" {
		msg["reasoning_content"] = rep.Reasoning
	}
	finish := "stop"
	if len(rep.ToolCalls) > 0 {
		var calls []map[string]any
		for i, c := range rep.ToolCalls {
			id := c.ID
			if id == "" {
				id = fmt.Sprintf("call_%d_%d", n, i+1)
			}
			calls = append(calls, map[string]any{
				"id": id, "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": c.Arguments},
			})
		}
		msg["tool_calls"] = calls
		finish = "tool_calls"
	}
	if rep.FinishReason != "" {
		finish = rep.FinishReason
	}
	u := Usage{Prompt: 10, Completion: 5}
	if rep.Usage != nil {
		u = *rep.Usage
	}
	out := map[string]any{
		"id":      fmt.Sprintf("chatcmpl-%d", n),
		"object":  "chat.completion",
		"created": 0,
		"model":   "fake",
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage": map[string]any{
			"prompt_tokens":             u.Prompt,
			"completion_tokens":         u.Completion,
			"total_tokens":              u.Prompt + u.Completion,
			"prompt_tokens_details":     map[string]any{"cached_tokens": u.Cached},
			"completion_tokens_details": map[string]any{"reasoning_tokens": u.Reasoning},
		},
	}
	if rep.NoUsage {
		delete(out, "usage")
	}
	return out
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error", "code": code}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// Embedded is how many texts the server has embedded so far.
func (s *Server) Embedded() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.embedded
}

// embedDims is the size of the fake vectors.
const embedDims = 64

// embed answers /embeddings with a deterministic bag-of-words vector per
// input (each lower-cased word hashed to one of 64 dimensions), so that
// texts sharing words are similar, as with a real model, and a replay
// can be checked against a recording.
func (s *Server) embed(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model string   `json:"model"`
		Input []string `json:"input"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Input) == 0 {
		writeError(w, http.StatusBadRequest, "invalid_request", "fake server: embeddings want {model, input: [strings]}")
		return
	}
	s.mu.Lock()
	s.embedded += len(req.Input)
	s.mu.Unlock()
	type item struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float64 `json:"embedding"`
	}
	out := struct {
		Object string         `json:"object"`
		Data   []item         `json:"data"`
		Model  string         `json:"model"`
		Usage  map[string]int `json:"usage"`
	}{Object: "list", Model: req.Model, Usage: map[string]int{"prompt_tokens": 0, "total_tokens": 0}}
	for i, text := range req.Input {
		v := make([]float64, embedDims)
		for _, word := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
			h := fnv.New32a()
			h.Write([]byte(word))
			v[h.Sum32()%embedDims]++
		}
		out.Data = append(out.Data, item{Object: "embedding", Index: i, Embedding: v})
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}
