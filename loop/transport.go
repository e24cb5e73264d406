package loop

import (
	"fmt"
	"io"
	"net/http"
)

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

// transport sits under the model's HTTP client and bounds every
// successful body, streamed or not; error bodies are bounded where they
// are read (wire).
type transport struct {
	base    http.RoundTripper
	maxBody int64 // 0: maxResponseBody
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.StatusCode >= 400 {
		return resp, err
	}
	max := t.maxBody
	if max == 0 {
		max = maxResponseBody
	}
	resp.Body = &boundedBody{ReadCloser: resp.Body, left: max, max: max}
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
