package loop

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
)

// maxErrorBody bounds what is read of an error response.
const maxErrorBody = 64 << 10

// maxResponseBody bounds a successful response, streamed or not. A
// completion is at most megabytes and a large batch of embeddings tens of
// them; an endpoint that sends more (a stream that never ends, a proxy's
// endless page) would otherwise be read until memory runs out.
const maxResponseBody = 256 << 20

// ResponseTooLargeError is a response body over the bound Max; the
// attempt fails, and it is not retried.
type ResponseTooLargeError struct{ Max int64 }

func (e *ResponseTooLargeError) Error() string {
	return fmt.Sprintf("the response body is larger than %d MiB, more than any completion: the endpoint is not answering as an OpenAI-compatible API", e.Max>>20)
}

// transport sits under the OpenAI client. Real endpoints answer errors in
// many shapes (OpenAI's error object, {"error": "text"}, vLLM's
// {"object":"error","message":...}, FastAPI's {"detail":...}, plain text,
// a proxy's HTML page); the client only understands the first and loses
// the server's message for the rest. The transport rewrites every error
// body into OpenAI's shape, keeping the message, so what the operator sees
// is what the server said. For a keyless endpoint (a local vLLM, llama.cpp
// or Ollama) it sends no Authorization header at all.
type transport struct {
	base    http.RoundTripper
	keyless bool
	maxBody int64 // 0: maxResponseBody
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.keyless {
		req = req.Clone(req.Context())
		req.Header.Del("Authorization")
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	if resp.StatusCode < 400 {
		max := t.maxBody
		if max == 0 {
			max = maxResponseBody
		}
		resp.Body = &boundedBody{ReadCloser: resp.Body, left: max, max: max}
		return resp, nil
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	resp.Body.Close()
	msg, code := errorMessage(body)
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	norm, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": "upstream_error", "code": code}})
	resp.Body = io.NopCloser(bytes.NewReader(norm))
	resp.ContentLength = int64(len(norm))
	resp.Header = resp.Header.Clone()
	resp.Header.Set("Content-Type", "application/json")
	resp.Header.Del("Content-Length")
	return resp, nil
}

// boundedBody fails a read that would take the body past its bound.
type boundedBody struct {
	io.ReadCloser
	left, max int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of exactly the bound from a longer one.
		var one [1]byte
		n, err := b.ReadCloser.Read(one[:])
		if n > 0 {
			return 0, &ResponseTooLargeError{Max: b.max}
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

var (
	htmlTitle = regexp.MustCompile(`(?is)<title[^>]*>(.*?)</title>`)
	htmlTag   = regexp.MustCompile(`(?s)<[^>]*>`)
	spaces    = regexp.MustCompile(`\s+`)
)

// errorMessage finds the server's own message in an error body of any of
// the shapes endpoints use.
func errorMessage(body []byte) (msg, code string) {
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
		return shorten(string(body)), ""
	}
	text := string(body)
	if strings.Contains(strings.ToLower(text), "<html") {
		if m := htmlTitle.FindStringSubmatch(text); m != nil {
			return shorten(strings.TrimSpace(m[1])), ""
		}
		text = htmlTag.ReplaceAllString(text, " ")
	}
	return shorten(text), ""
}

func shorten(s string) string {
	s = strings.TrimSpace(spaces.ReplaceAllString(s, " "))
	if r := []rune(s); len(r) > 500 {
		return string(r[:500]) + "..."
	}
	return s
}
