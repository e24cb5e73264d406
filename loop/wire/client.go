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
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
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
	// Cut is true when the body is JSON that stops before its end.
	Cut bool
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("the answer to %s is not one the API gives (%v): %s", e.Path, e.Err, e.Body)
}

func (e *DecodeError) Unwrap() error { return e.Err }

// Post sends body to path and decodes the answer into out. A successful
// answer whose body is an error object (proxies answer failures with 200)
// is the server's failure, a *ReportedError.
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
	if re := reported(b); re != nil {
		re.Header = resp.Header
		return re
	}
	if err := json.Unmarshal(b, out); err != nil {
		return &DecodeError{Path: path, Err: err, Body: Shorten(string(b)), Cut: cutShort(b)}
	}
	return nil
}

// cutShort says whether b is a JSON text that stops before its end: what
// a connection closed in the middle of a body leaves, when nothing in
// the framing said how long it was.
func cutShort(b []byte) bool {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' && b[0] != '[' {
		return false
	}
	var v any
	return errors.Is(json.NewDecoder(bytes.NewReader(b)).Decode(&v), io.ErrUnexpectedEOF)
}

// Stream sends body to path and hands each event of the answer to each,
// in order, until the stream ends, [DONE] comes, or each fails. An event
// of type error, or whose data holds an "error" member, is the server's
// failure, a *ReportedError. An answer that is no event stream (a server
// that ignores stream, a proxy's page) is a *NotStreamError holding it.
func (c *Client) Stream(ctx context.Context, path string, body []byte, each func(Event) error) error {
	resp, err := c.post(ctx, path, body, true)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	answer := bufio.NewReader(resp.Body)
	if mt := streamOrNot(resp.Header.Get("Content-Type"), answer); mt != "" {
		b, err := io.ReadAll(answer)
		if err != nil {
			return err
		}
		if re := reported(b); re != nil {
			return re
		}
		return &NotStreamError{MediaType: mt, Body: b}
	}
	err = ReadEvents(answer, func(ev Event) error {
		data := bytes.TrimSpace(ev.Data)
		switch {
		case len(data) == 0:
			// A keep-alive: nothing to read.
			return nil
		case bytes.Equal(data, []byte("[DONE]")):
			return errDone
		case ev.Type == "error":
			msg, code := ErrorMessage(data)
			return &ReportedError{Code: code, Message: msg}
		}
		if re := reported(data); re != nil {
			return re
		}
		return each(ev)
	})
	if errors.Is(err, bufio.ErrTooLong) {
		return &DecodeError{Path: path, Err: fmt.Errorf("a line of the event stream is longer than %d MiB", maxEventLine>>20)}
	}
	return err
}

// streamOrNot is "" for an answer that is an event stream, else the
// media type it is. Servers and gateways label answers loosely (a stream
// as text/plain or nothing, an error object or a page as
// text/event-stream), so an answer is judged by its first byte that is
// not a byte order mark or white space: an object is a whole answer (a
// server that ignores stream, or its error), markup a page; an event
// stream starts with a field name or a comment.
func streamOrNot(contentType string, body *bufio.Reader) string {
	mt, _, _ := mime.ParseMediaType(contentType)
	head, _ := body.Peek(sniffLen)
	head = bytes.TrimLeft(bytes.TrimPrefix(head, []byte("\xef\xbb\xbf")), " \t\r\n")
	switch {
	case len(head) > 0 && head[0] == '{':
		return "application/json"
	case len(head) > 0 && head[0] == '<':
		return cmp.Or(mt, "text/html")
	}
	return ""
}

// sniffLen is how much of a streamed answer is looked at before it is
// read as events: whitespace a server sends first is skipped.
const sniffLen = 64 << 10

// NotStreamError is an answer to a streamed request that is no event
// stream.
type NotStreamError struct {
	MediaType string
	Body      []byte
}

func (e *NotStreamError) Error() string {
	msg, _ := ErrorMessage(e.Body)
	return fmt.Sprintf("asked for an event stream, the endpoint answered %s: %s", cmp.Or(e.MediaType, "without a content type"), msg)
}

// ReportedError is a failure the server reported in an answer it sent as
// a success: an error object in a body or in a stream.
type ReportedError struct {
	Code, Message string
	// Header is the answer's, for Retry-After; nil inside a stream.
	Header http.Header
}

func (e *ReportedError) Error() string { return e.Message }

// reported is the failure a body reports, or nil: an "error" member that
// says something (an object with a message, code or type, or a non-empty
// string), or an object that is itself an error (vLLM's {"object":
// "error"}, {"type": "error"} without an event type), or FastAPI's
// {"detail": ...} where no answer is.
func reported(data []byte) *ReportedError {
	// Every answer and every event passes here: only one that names an
	// error or a detail is decoded a second time.
	if !bytes.Contains(data, []byte(`"error"`)) && !bytes.Contains(data, []byte(`"detail"`)) {
		return nil
	}
	var probe struct {
		Error   json.RawMessage `json:"error"`
		Object  string          `json:"object"`
		Type    string          `json:"type"`
		Detail  json.RawMessage `json:"detail"`
		Choices present         `json:"choices"`
		Output  present         `json:"output"`
		Data    present         `json:"data"`
	}
	if json.Unmarshal(data, &probe) != nil {
		return nil
	}
	failed := probe.Object == "error" || probe.Type == "error" ||
		len(probe.Detail) > 0 && string(probe.Detail) != "null" && !probe.Choices && !probe.Output && !probe.Data
	switch e := bytes.TrimSpace(probe.Error); {
	case len(e) == 0 || string(e) == "null" || string(e) == "false" || string(e) == `""`:
	case e[0] == '{':
		var obj map[string]any
		if json.Unmarshal(e, &obj) == nil && (obj["message"] != nil && obj["message"] != "" || codeOf(obj) != "") {
			failed = true
		}
	default:
		failed = true
	}
	if !failed {
		return nil
	}
	msg, code := ErrorMessage(data)
	return &ReportedError{Code: code, Message: msg}
}

// present records that a member is there without keeping its value.
type present bool

func (p *present) UnmarshalJSON([]byte) error {
	*p = true
	return nil
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
		// Go's text of a failed request quotes its URL, credentials and
		// query string (where gateways carry keys) included; the caller
		// names the endpoint as it may be shown.
		var ue *url.Error
		if errors.As(err, &ue) {
			return nil, &TransportError{Err: ue.Err}
		}
		return nil, err
	}
	if resp.StatusCode < 300 {
		return resp, nil
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	resp.Body.Close()
	msg, code := ErrorMessage(b)
	if resp.StatusCode < 400 {
		// A redirect without a place to go (ErrRedirect stops the others).
		msg = fmt.Sprintf("a redirect (HTTP %d) with nowhere to go; harness follows no redirect from a model endpoint: give the endpoint's own address as --base-url", resp.StatusCode)
	}
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	return nil, &APIError{StatusCode: resp.StatusCode, Code: code, Message: msg, Header: resp.Header}
}

// TransportError is a request that got no answer, without the URL.
type TransportError struct{ Err error }

func (e *TransportError) Error() string { return e.Err.Error() }
func (e *TransportError) Unwrap() error { return e.Err }

// ErrRedirect is how a client follows no redirect (its CheckRedirect): a
// model endpoint has no reason to send one, and following it would send
// the key and the conversation to a place nobody named (Go's client keeps
// the Authorization header on a redirect to the same host, whatever its
// port or scheme).
func ErrRedirect(req *http.Request, via []*http.Request) error {
	status := 0
	if req.Response != nil {
		status = req.Response.StatusCode
	}
	return fmt.Errorf("the endpoint redirected the request to %s (HTTP %d); harness follows no redirect from a model endpoint: give the address it redirects to as --base-url", req.URL.Host, status)
}

// Encode is body as a JSON object whose top-level members are body's,
// then verbatim's and extra's set over them, in key order. The values of
// verbatim and extra are written as their bytes: encoding/json would
// compact raw JSON and escape <, > and & in it, and an item a server sent
// (an encrypted reasoning item) goes back byte for byte. Validating
// extra's keys is the caller's.
func Encode(body any, verbatim, extra map[string]json.RawMessage) ([]byte, error) {
	own, err := marshal(body)
	if err != nil {
		return nil, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(own, &fields); err != nil {
		return nil, err
	}
	for _, set := range []map[string]json.RawMessage{verbatim, extra} {
		for k, v := range set {
			fields[k] = v
		}
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range slices.Sorted(maps.Keys(fields)) {
		if i > 0 {
			b.WriteByte(',')
		}
		key, _ := marshal(k)
		b.Write(key)
		b.WriteByte(':')
		b.Write(fields[k])
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// Array is items as a JSON array, each written by marshal except raw
// JSON (json.RawMessage), which is written as its bytes.
func Array(items []any) ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, it := range items {
		if i > 0 {
			b.WriteByte(',')
		}
		if raw, ok := it.(json.RawMessage); ok {
			if !json.Valid(raw) {
				return nil, errors.New("an item to send back is not JSON")
			}
			b.Write(raw)
			continue
		}
		v, err := marshal(it)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte(']')
	return b.Bytes(), nil
}

// marshal is json.Marshal without escaping <, > and &: the bodies go to
// an API, not into HTML.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
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
			return m, codeOf(e)
		}
		code := codeOf(v)
		if m, ok := v["message"].(string); ok {
			return m, code
		}
		switch d := v["detail"].(type) {
		case string:
			return d, code
		case nil:
		default:
			b, _ := json.Marshal(d)
			return string(b), code
		}
		return Shorten(string(body)), code
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

// codeOf is an error object's code: its "code" (a number, as vLLM sends
// the HTTP status, in digits), else its "type" (where OpenAI's server
// errors and Anthropic-compatible ones say what failed), "" for neither.
// A type of "error" names the object's kind, not the failure.
func codeOf(e map[string]any) string {
	switch c := e["code"].(type) {
	case string:
		if c != "" {
			return c
		}
	case float64:
		return strconv.FormatFloat(c, 'f', -1, 64)
	}
	if t, ok := e["type"].(string); ok && t != "error" {
		return t
	}
	return ""
}

// Shorten is s on one line, at most 500 runes.
func Shorten(s string) string {
	s = strings.TrimSpace(spaces.ReplaceAllString(s, " "))
	if r := []rune(s); len(r) > 500 {
		return string(r[:500]) + "..."
	}
	return s
}
