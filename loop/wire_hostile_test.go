package loop_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harness-dev/harness/loop"
)

// Each test here is an answer a hostile or sloppy endpoint can give, and
// what harness makes of it.

// TestWireStreamedCallsWithoutIndexOrID: a server that sends each call
// whole, with neither index nor id, or with one id for every call, gets
// the calls a non-streamed body would hold: a part that names a function
// begins a call.
func TestWireStreamedCallsWithoutIndexOrID(t *testing.T) {
	stream := events(
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"type":"function","function":{"name":"read_file","arguments":"{\"path\":\"x\"}"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"type":"function","function":{"name":"list","arguments":"{}"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`, "[DONE]")
	resp, err := ask(t, rawServer(t, rawStream(stream)), loop.WireChat, true, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := []loop.ToolCall{{Name: "read_file", Arguments: `{"path":"x"}`}, {Name: "list", Arguments: `{}`}}
	if !reflect.DeepEqual(resp.Message.ToolCalls, want) {
		t.Errorf("calls %+v; a body without streaming holds %+v", resp.Message.ToolCalls, want)
	}
	// The same with one id given to both (servers that number calls per
	// message, or not at all): the second is taken for more of the first.
	stream = events(
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"call_0","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"x\"}"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"call_0","type":"function","function":{"name":"list","arguments":"{}"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`, "[DONE]")
	resp, err = ask(t, rawServer(t, rawStream(stream)), loop.WireChat, true, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Message.ToolCalls) != 2 {
		t.Errorf("calls %+v; a body without streaming holds two", resp.Message.ToolCalls)
	}
}

// TestWireErrorBodyWithStatus200: proxies (LiteLLM, OpenRouter and
// others) answer a failure with 200 and an error object: the server's own
// words reach the error, streamed or not, over either wire API.
func TestWireErrorBodyWithStatus200(t *testing.T) {
	body := `{"error":{"message":"Upstream provider rejected the request: quota exhausted","code":"quota"}}`
	for _, wireAPI := range []string{loop.WireChat, loop.WireResponses} {
		t.Run(wireAPI, func(t *testing.T) {
			base := rawServer(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, body)
			})
			_, err := ask(t, base, wireAPI, false, 1)
			if err == nil || !strings.Contains(err.Error(), "quota exhausted") {
				t.Errorf("err %v; want the server's own words", err)
			}
		})
	}
}

// TestStreamAnsweredWithoutEvents: asked to stream, a proxy's 200 HTML
// page is a provider error that says what came, asked once; a server that
// ignores stream and answers one JSON body has answered, and its answer
// is taken.
func TestStreamAnsweredWithoutEvents(t *testing.T) {
	for _, tc := range []struct{ name, ctype, body, want, answer string }{
		{"html", "text/html", "<html><head><title>Access denied by the corporate proxy</title></head><body>denied</body></html>", "Access denied by the corporate proxy", ""},
		{"json body", "application/json", `{"choices":[{"index":0,"message":{"content":"hi"},"finish_reason":"stop"}]}`, "", "hi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			base := rawServer(t, func(w http.ResponseWriter, r *http.Request) {
				n++
				w.Header().Set("Content-Type", tc.ctype)
				io.WriteString(w, tc.body)
			})
			resp, err := ask(t, base, loop.WireChat, true, 3)
			if tc.answer != "" {
				if err != nil || resp.Message.Content != tc.answer || n != 1 {
					t.Errorf("after %d attempts: %q, %v; want the body's answer %q", n, resp.Message.Content, err, tc.answer)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || n != 1 {
				t.Errorf("after %d attempts: %v; want one attempt and an error naming %q", n, err, tc.want)
			}
		})
	}
}

// TestWireReasoningItemByteForByte: a reasoning item goes back as the
// bytes the server sent, spacing and <, > and & included (encoding/json
// would compact and escape them), so the journal's digest names what is
// sent back.
func TestWireReasoningItemByteForByte(t *testing.T) {
	item := "{\n  \"type\": \"reasoning\",\n  \"id\": \"rs_1\",\n  \"summary\": [{\"type\": \"summary_text\", \"text\": \"if a < b && c > d\"}],\n  \"encrypted_content\": \"gAAAA+/=\"\n}"
	var mu sync.Mutex
	var bodies [][]byte
	n := 0
	base := rawServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, b)
		n++
		first := n == 1
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if first {
			io.WriteString(w, `{"status":"completed","output":[`+item+`,{"type":"function_call","call_id":"c1","name":"noop","arguments":"{}","status":"completed"}]}`)
			return
		}
		io.WriteString(w, `{"status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"done"}]}]}`)
	})
	m := loop.NewOpenAI(loop.OpenAIConfig{BaseURL: base, Retry: loop.RetryPolicy{MaxAttempts: 1}})
	req := loop.Request{Model: "m", WireAPI: loop.WireResponses, Messages: []loop.Message{{Role: loop.RoleUser, Content: "x"}}}
	resp, err := m.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Message.Reasoning) != 1 || string(resp.Message.Reasoning[0].Raw) != item {
		t.Fatalf("kept %+v", resp.Message.Reasoning)
	}
	req.Messages = append(req.Messages, resp.Message, loop.Message{Role: loop.RoleTool, ToolCallID: "c1", Content: "ok"})
	if _, err := m.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(bodies[1], []byte(item)) {
		t.Errorf("the reasoning item did not go back byte for byte:\nsent back: %s\nreceived:  %s", bodies[1], item)
	}
}

// TestWireEmbeddingsRequestTimeout: an embeddings request is bounded
// by the request timeout as a model request is, so an endpoint that never
// answers /embeddings does not hold find_skills.
func TestWireEmbeddingsRequestTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	m := loop.NewOpenAI(loop.OpenAIConfig{BaseURL: srv.URL + "/v1", Retry: loop.RetryPolicy{MaxAttempts: 1, RequestTimeout: 200 * time.Millisecond}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	_, err := m.Embed(ctx, "e", []string{"a"})
	if d := time.Since(start); err == nil || d > 2*time.Second {
		t.Errorf("embeddings waited %v (err %v) with a request timeout of 200ms", d, err)
	}
}

// TestWireEmbeddingsDuplicateIndex: two vectors with the same index
// leave another input without a vector: the answer is refused, never
// taken with a hole in it.
func TestWireEmbeddingsDuplicateIndex(t *testing.T) {
	base := rawServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"data":[{"index":0,"embedding":[1,0]},{"index":0,"embedding":[0,1]}]}`)
	})
	m := loop.NewOpenAI(loop.OpenAIConfig{BaseURL: base, Retry: loop.RetryPolicy{MaxAttempts: 1}})
	vs, err := m.Embed(context.Background(), "e", []string{"a", "b"})
	if err == nil {
		t.Errorf("vectors %v taken; input 1 has none", vs)
	}
}

// TestWireUserinfoInTransportErrors: a transport failure's text is
// Go's, which quotes the URL with its user name (a token, for proxies
// that take one there): the error harness reports names no URL, and the
// endpoint only as it may be shown.
func TestWireUserinfoInTransportErrors(t *testing.T) {
	l := httptest.NewServer(http.NotFoundHandler())
	addr := l.Listener.Addr().String()
	l.Close() // nothing listens there now
	for _, base := range []string{"http://tok-secret-user@" + addr + "/v1", "http://tok-secret-user:pw@" + addr + "/v1"} {
		m := loop.NewOpenAI(loop.OpenAIConfig{BaseURL: base, Retry: loop.RetryPolicy{MaxAttempts: 1}})
		var attempts []string
		m2 := loop.NewOpenAI(loop.OpenAIConfig{BaseURL: base, Retry: loop.RetryPolicy{MaxAttempts: 1}, OnAttempt: func(a loop.Attempt) { attempts = append(attempts, a.Error) }})
		_, err := m.Complete(context.Background(), loop.Request{Model: "m", Messages: []loop.Message{{Role: loop.RoleUser, Content: "x"}}})
		m2.Complete(context.Background(), loop.Request{Model: "m", Messages: []loop.Message{{Role: loop.RoleUser, Content: "x"}}})
		if err == nil || strings.Contains(err.Error(), "tok-secret-user") || strings.Contains(strings.Join(attempts, "\n"), "tok-secret-user") {
			t.Errorf("base %s: the error shows the userinfo: %v", base, err)
		}
	}
}

// TestWireRedirectNotFollowedAcrossSchemes: Go's client keeps Authorization on
// a redirect to the same host name, whatever the port or scheme: an https
// endpoint that answers 307 to http:// on another port would have the key
// sent there in clear text. A POST to a model API has no reason to be
// redirected, and no redirect is followed.
func TestWireRedirectNotFollowedAcrossSchemes(t *testing.T) {
	var got string
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Get("Authorization")
		io.WriteString(w, `{"choices":[{"index":0,"message":{"content":"hi"},"finish_reason":"stop"}]}`)
	}))
	defer plain.Close()
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, _ := url.Parse(plain.URL)
		u.Path = r.URL.Path
		http.Redirect(w, r, u.String(), http.StatusTemporaryRedirect)
	}))
	defer tlsSrv.Close()
	m := loop.NewOpenAI(loop.OpenAIConfig{BaseURL: tlsSrv.URL + "/v1", APIKey: "sk-wire-key", HTTPClient: tlsSrv.Client(), Retry: loop.RetryPolicy{MaxAttempts: 1}})
	m.Complete(context.Background(), loop.Request{Model: "m", Messages: []loop.Message{{Role: loop.RoleUser, Content: "x"}}})
	if strings.Contains(got, "sk-wire-key") {
		t.Errorf("the key went in clear text to %s after a redirect from %s", plain.URL, tlsSrv.URL)
	}
}

// TestWireRedirectToAnotherPort: a 302 to the same host on another
// port (another service) is not followed: the key does not go there, and
// what it would answer is not taken for the model's.
func TestWireRedirectToAnotherPort(t *testing.T) {
	var got, method string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, method = r.Header.Get("Authorization"), r.Method
		io.WriteString(w, `{"choices":[{"index":0,"message":{"content":"from elsewhere"},"finish_reason":"stop"}]}`)
	}))
	defer other.Close()
	base := rawServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusFound)
	})
	resp, err := ask(t, base, loop.WireChat, false, 1)
	if got != "" || err == nil {
		t.Errorf("redirected to %s: Authorization %q, method %s, answer %q, err %v", other.URL, got, method, resp.Message.Content, err)
	}
}

// TestWireStreamedServerErrorRetried: a 500 is retried, and so is the
// same failure reported inside a stream (a chat chunk with an error
// member, a Responses error event with the error nested).
func TestWireStreamedServerErrorRetried(t *testing.T) {
	ok := map[string]string{
		loop.WireChat:      events(`{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}`),
		loop.WireResponses: events(`{"type":"response.completed","response":{"status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"hi"}]}]}}`),
	}
	for _, tc := range []struct{ name, wire, fail string }{
		{"chat error member", loop.WireChat, events(`{"error":{"message":"The server had an error while processing your request","type":"server_error","code":"server_error"}}`)},
		{"responses nested error event", loop.WireResponses, events(`{"type":"error","error":{"type":"server_error","code":"server_error","message":"The server had an error"}}`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			base := rawServer(t, func(w http.ResponseWriter, r *http.Request) {
				n++
				if n == 1 {
					rawStream(tc.fail)(w, r)
					return
				}
				rawStream(ok[tc.wire])(w, r)
			})
			resp, err := ask(t, base, tc.wire, true, 2)
			if err != nil || resp.Message.Content != "hi" {
				t.Errorf("after %d attempts: %q, %v; a server_error is worth another attempt", n, resp.Message.Content, err)
			}
		})
	}
}

// TestWireFailuresSaidForWhatTheyAre: what the endpoint sent that is no
// answer (a 200 HTML page, an event line over the reader's bound) is not
// reported as an unreachable provider, nor in a reader's own words.
func TestWireFailuresSaidForWhatTheyAre(t *testing.T) {
	base := rawServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "<html><body>not an API</body></html>")
	})
	if _, err := ask(t, base, loop.WireChat, false, 1); err == nil || strings.Contains(err.Error(), "unreachable") {
		t.Errorf("a 200 HTML page: %v", err)
	}
	base = rawServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: ")
		chunk := strings.Repeat("a", 1<<20)
		for i := 0; i < 65; i++ {
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
		}
		io.WriteString(w, "\n\n")
	})
	// A minute: the race detector makes reading 65 MiB slow.
	m := loop.NewOpenAI(loop.OpenAIConfig{BaseURL: base, Stream: true, Retry: loop.RetryPolicy{MaxAttempts: 1, RequestTimeout: time.Minute}})
	if _, err := m.Complete(context.Background(), loop.Request{Model: "m", Messages: []loop.Message{{Role: loop.RoleUser, Content: "x"}}}); err == nil || strings.Contains(err.Error(), "bufio") || strings.Contains(err.Error(), "unreachable") {
		t.Errorf("a 65 MiB event line: %v", err)
	}
}

// TestWireEventStreamFraming: two framings of the event-stream
// format: a stream may start with a byte order mark, which is dropped
// (the first event, here the answer's first words, is kept); an event
// whose data is empty ("data:" alone, a keep-alive) is skipped.
func TestWireEventStreamFraming(t *testing.T) {
	for _, tc := range []struct{ name, stream string }{
		{"byte order mark", "\ufeff" + events(`{"choices":[{"index":0,"delta":{"content":"Hello, "}}]}`, `{"choices":[{"index":0,"delta":{"content":"world"},"finish_reason":"stop"}]}`, "[DONE]")},
		{"empty data heartbeat", events(`{"choices":[{"index":0,"delta":{"content":"Hello, "}}]}`) + "data:\n\n" + events(`{"choices":[{"index":0,"delta":{"content":"world"},"finish_reason":"stop"}]}`, "[DONE]")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := ask(t, rawServer(t, rawStream(tc.stream)), loop.WireChat, true, 1)
			if err != nil || resp.Message.Content != "Hello, world" {
				t.Errorf("got %q, %v; want %q", resp.Message.Content, err, "Hello, world")
			}
		})
	}
}

// TestWireContradictingFinishReasons: choice 0 says tool_calls, then
// length: the reason that runs nothing wins, so calls the server says
// were cut at the token limit are not run.
func TestWireContradictingFinishReasons(t *testing.T) {
	stream := events(
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"write_file","arguments":"{\"path\":\"a.tx"}}]},"finish_reason":"tool_calls"}]}`,
		`{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`, "[DONE]")
	resp, err := ask(t, rawServer(t, rawStream(stream)), loop.WireChat, true, 1)
	if err != nil {
		t.Fatal(err)
	}
	if resp.FinishReason == "tool_calls" {
		t.Errorf("finish reason %q: a call the stream also said was cut at the limit would run", resp.FinishReason)
	}
}

// TestWireTypedErrorEvent: an error sent as an event of type error
// whose data is the error object itself (no "error" member) is the
// server's failure, in its words.
func TestWireTypedErrorEvent(t *testing.T) {
	stream := "event: error\ndata: {\"message\":\"model is overloaded, try later\",\"type\":\"overloaded_error\"}\n\n"
	_, err := ask(t, rawServer(t, rawStream(stream)), loop.WireChat, true, 1)
	if err == nil || !strings.Contains(err.Error(), "model is overloaded") {
		t.Errorf("err %v; want the server's words", err)
	}
}

// TestWireCutPlainBodyRetried: a plain answer whose connection
// drops mid-body is asked again, whether the framing shows the cut (a
// Content-Length not reached) or the body ends at the connection's close
// (HTTP/1.0, a proxy) inside its JSON, as a stream without its finish is.
func TestWireCutPlainBodyRetried(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	n := 0
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n++
			http.ReadRequest(bufio.NewReader(c))
			if n == 1 {
				io.WriteString(c, "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n"+`{"choices":[{"index":0,"message":{"content":"hel`)
			} else {
				body := `{"choices":[{"index":0,"message":{"content":"hello"},"finish_reason":"stop"}]}`
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body)
			}
			c.Close()
		}
	}()
	resp, err := ask(t, "http://"+ln.Addr().String()+"/v1", loop.WireChat, false, 2)
	if err != nil || resp.Message.Content != "hello" {
		t.Errorf("after %d attempts: %q, %v; a body cut inside its JSON is worth another attempt", n, resp.Message.Content, err)
	}
}

// keep encoding/json imported for tests that build bodies.
var _ = json.Marshal
