// Package wire is the OpenAI-compatible HTTP API as harness speaks it:
// the request and response bodies of Chat Completions, the Responses API
// and Embeddings as Go types, the POST that sends one, and the server-sent
// event stream a streamed answer comes in.
//
// It holds only what harness sends and reads. The official Go client
// (openai-go) was the first choice and was measured: its root package
// holds every service of the API and was about two fifths of the CPU a
// fresh build of harness took, for three endpoints whose retries, error
// bodies and environment defaults harness had already turned off or
// replaced (docs/dependencies.md).
package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
)

// maxErrorBody bounds what is read of an error response.
const maxErrorBody = 64 << 10

// Client posts bodies to one endpoint. Nothing but its fields reaches the
// wire: no environment variable is read.
type Client struct {
	// Base is the endpoint's URL up to the API's paths ("…/v1").
	Base *url.URL
	// Key is sent as a bearer token; empty sends no Authorization header
	// (a local vLLM, llama.cpp or Ollama).
	Key string
	// Org and Project are sent as OpenAI's headers when set.
	Org, Project string
	HTTP         *http.Client
}

// APIError is an answer with an HTTP status of 400 or more. Endpoints
// answer errors in many shapes; Message is the server's own words from
// whichever it used.
type APIError struct {
	StatusCode int
	Code       string
	Message    string
	// Header is the answer's, for Retry-After.
	Header http.Header
}

func (e *APIError) Error() string {
	return fmt.Sprintf("HTTP %d: %s", e.StatusCode, e.Message)
}

// DecodeError is a successful answer whose body is not what the path
// answers with.
type DecodeError struct {
	Path string
	Err  error
	// Body is the start of what came, for the operator.
	Body string
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("the answer to %s is not one the API gives (%v): %s", e.Path, e.Err, e.Body)
}

func (e *DecodeError) Unwrap() error { return e.Err }

// Post sends body to path and decodes the answer into out.
func (c *Client) Post(ctx context.Context, path string, body []byte, out any) error {
	resp, err := c.post(ctx, path, body, false)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, out); err != nil {
		return &DecodeError{Path: path, Err: err, Body: Shorten(string(b))}
	}
	return nil
}

// Stream sends body to path and hands each event of the answer to each,
// in order, until the stream ends, [DONE] comes, or each fails. An event
// whose data holds an "error" member is the server's failure, returned
// as a StreamError.
func (c *Client) Stream(ctx context.Context, path string, body []byte, each func(Event) error) error {
	resp, err := c.post(ctx, path, body, true)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return ReadEvents(resp.Body, func(ev Event) error {
		if bytes.HasPrefix(ev.Data, []byte("[DONE]")) {
			return errDone
		}
		if se := streamFailure(ev.Data); se != nil {
			return se
		}
		return each(ev)
	})
}

// StreamError is a failure the server reported inside a stream.
type StreamError struct {
	Code, Message string
}

func (e *StreamError) Error() string {
	return "the stream reported an error: " + e.Message
}

// streamFailure is the failure an event reports with a top-level "error"
// member, or nil.
func streamFailure(data []byte) *StreamError {
	var probe struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(data, &probe) != nil || len(probe.Error) == 0 || string(probe.Error) == "null" {
		return nil
	}
	msg, code := ErrorMessage(data)
	return &StreamError{Code: code, Message: msg}
}

func (c *Client) post(ctx context.Context, path string, body []byte, stream bool) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.Base.JoinPath(path).String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if stream {
		req.Header.Set("Accept", "text/event-stream")
	} else {
		req.Header.Set("Accept", "application/json")
	}
	if c.Key != "" {
		req.Header.Set("Authorization", "Bearer "+c.Key)
	}
	if c.Org != "" {
		req.Header.Set("OpenAI-Organization", c.Org)
	}
	if c.Project != "" {
		req.Header.Set("OpenAI-Project", c.Project)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 400 {
		return resp, nil
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	resp.Body.Close()
	msg, code := ErrorMessage(b)
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	return nil, &APIError{StatusCode: resp.StatusCode, Code: code, Message: msg, Header: resp.Header}
}

// WithExtra is body with each of extra's members set over it, in key
// order. Validating the keys is the caller's.
func WithExtra(body any, extra map[string]json.RawMessage) ([]byte, error) {
	b, err := json.Marshal(body)
	if err != nil || len(extra) == 0 {
		return b, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return nil, err
	}
	for k, v := range extra {
		fields[k] = v
	}
	return json.Marshal(fields)
}

var (
	htmlTitle = regexp.MustCompile(`(?is)<title[^>]*>(.*?)</title>`)
	htmlTag   = regexp.MustCompile(`(?s)<[^>]*>`)
	spaces    = regexp.MustCompile(`\s+`)
)

// ErrorMessage finds the server's own message in an error body of any of
// the shapes endpoints use: OpenAI's error object, {"error": "text"},
// vLLM's {"object":"error","message":…}, FastAPI's {"detail":…}, plain
// text, a proxy's HTML page.
func ErrorMessage(body []byte) (msg, code string) {
	var v map[string]any
	if json.Unmarshal(body, &v) == nil {
		switch e := v["error"].(type) {
		case string:
			return e, ""
		case map[string]any:
			m, _ := e["message"].(string)
			c := fmt.Sprint(e["code"])
			if c == "<nil>" {
				c = ""
			}
			return m, c
		}
		if m, ok := v["message"].(string); ok {
			return m, ""
		}
		switch d := v["detail"].(type) {
		case string:
			return d, ""
		case nil:
		default:
			b, _ := json.Marshal(d)
			return string(b), ""
		}
		return Shorten(string(body)), ""
	}
	text := string(body)
	if strings.Contains(strings.ToLower(text), "<html") {
		if m := htmlTitle.FindStringSubmatch(text); m != nil {
			return Shorten(strings.TrimSpace(m[1])), ""
		}
		text = htmlTag.ReplaceAllString(text, " ")
	}
	return Shorten(text), ""
}

// Shorten is s on one line, at most 500 runes.
func Shorten(s string) string {
	s = strings.TrimSpace(spaces.ReplaceAllString(s, " "))
	if r := []rune(s); len(r) > 500 {
		return string(r[:500]) + "..."
	}
	return s
}
