package loop_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/loop"
)

// The tests here play a hostile or sloppy OpenAI-compatible endpoint over
// real loopback HTTP (httptest), for what looptest cannot script: raw
// event streams, odd framings, bodies of any shape.

// rawServer serves h and returns its base URL ("…/v1").
func rawServer(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// rawStream answers every request with text as an event stream.
func rawStream(text string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, text)
	}
}

// ask sends one user message over wireAPI.
func ask(t *testing.T, base, wireAPI string, stream bool, attempts int) (loop.Response, error) {
	t.Helper()
	m := loop.NewOpenAI(loop.OpenAIConfig{BaseURL: base, APIKey: "sk-wire-key", Stream: stream,
		Retry: loop.RetryPolicy{MaxAttempts: attempts, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond, RequestTimeout: 5 * time.Second}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return m.Complete(ctx, loop.Request{Model: "m", WireAPI: wireAPI, Messages: []loop.Message{{Role: loop.RoleUser, Content: "x"}}})
}

// events frames each JSON text as one event, LF-ended.
func events(data ...string) string {
	var b strings.Builder
	for _, d := range data {
		b.WriteString("data: " + d + "\n\n")
	}
	return b.String()
}

// TestWireHostileChatStreamsHeld: streams in every framing and chunking a
// server may use give the answer the same content as one JSON body would.
func TestWireHostileChatStreamsHeld(t *testing.T) {
	twoCalls := []loop.ToolCall{{ID: "a", Name: "read_file", Arguments: `{"path":"x"}`}, {ID: "b", Name: "list", Arguments: `{}`}}
	oneCall := []loop.ToolCall{{ID: "a", Name: "read_file", Arguments: `{"path":"x"}`}}
	usage := `{"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10}}`
	for _, tc := range []struct {
		name    string
		stream  string
		content string
		calls   []loop.ToolCall
		finish  string
	}{
		{"split arguments, index", events(
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"read_file","arguments":"{\"pa"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"th\":\"x\"}"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"b","type":"function","function":{"name":"list","arguments":"{}"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`, usage, "[DONE]"), "", twoCalls, "tool_calls"},
		{"index -1 for the only call", events(
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":-1,"id":"a","function":{"name":"read_file","arguments":"{\"path\":"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":-1,"function":{"arguments":"\"x\"}"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`, "[DONE]"), "", oneCall, "tool_calls"},
		{"name repeated in every part", events(
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"read_file","arguments":"{\"path\":"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"read_file","arguments":"\"x\"}"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`, "[DONE]"), "", oneCall, "tool_calls"},
		{"id only in a later part", events(
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"read_file","arguments":"{\"path\":"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"arguments":"\"x\"}"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`, "[DONE]"), "", oneCall, "tool_calls"},
		{"calls without index, each whole with its id", events(
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"a","function":{"name":"read_file","arguments":"{\"path\":\"x\"}"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"b","function":{"name":"list","arguments":"{}"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`, "[DONE]"), "", twoCalls, "tool_calls"},
		{"interleaved choices", events(
			`{"choices":[{"index":1,"delta":{"content":"NO"}},{"index":0,"delta":{"content":"he"}}]}`,
			`{"choices":[{"index":1,"delta":{},"finish_reason":"stop"}]}`,
			`{"choices":[{"index":0,"delta":{"content":"llo"}}]}`,
			`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, "[DONE]"), "hello", nil, "stop"},
		{"finish twice, contradicting", events(
			`{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"length"}]}`,
			`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, "[DONE]"), "hi", nil, "length"},
		{"CRLF lines", strings.ReplaceAll(events(`{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}`, "[DONE]"), "\n", "\r\n"), "hi", nil, "stop"},
		{"CR lines", strings.ReplaceAll(events(`{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}`, "[DONE]"), "\n", "\r"), "hi", nil, "stop"},
		{"comments, event and id lines", ": keep-alive\n\nevent: message\nid: 1\nretry: 10\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\n: bye\n\ndata: [DONE]\n\n", "hi", nil, "stop"},
		{"data over several lines", "data: {\"choices\":[{\"index\":0,\ndata: \"delta\":{\"content\":\"hi\"},\ndata: \"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n", "hi", nil, "stop"},
		{"no space after the colon", "data:{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\ndata:[DONE]\n\n", "hi", nil, "stop"},
		{"no [DONE]", events(`{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}`), "hi", nil, "stop"},
		{"null members", events(`{"choices":[{"index":0,"delta":{"content":null,"tool_calls":null,"role":"assistant"},"finish_reason":null}],"usage":null,"error":null}`, `{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}`), "hi", nil, "stop"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := ask(t, rawServer(t, rawStream(tc.stream)), loop.WireChat, true, 1)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Message.Content != tc.content || resp.FinishReason != tc.finish || !reflect.DeepEqual(resp.Message.ToolCalls, tc.calls) {
				t.Errorf("got content %q finish %q calls %+v; want %q %q %+v", resp.Message.Content, resp.FinishReason, resp.Message.ToolCalls, tc.content, tc.finish, tc.calls)
			}
		})
	}
}

// TestWireHostileCutStreamsRetried: a stream that stops before choice 0
// says why is asked again, never taken.
func TestWireHostileCutStreamsRetried(t *testing.T) {
	for _, tc := range []struct{ name, wireAPI, stream string }{
		{"chat, [DONE] early", loop.WireChat, events(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"read_file","arguments":"{\"pa"}}]}}]}`, "[DONE]")},
		{"chat, only another choice finished", loop.WireChat, events(`{"choices":[{"index":0,"delta":{"content":"hi"}}]}`, `{"choices":[{"index":1,"delta":{},"finish_reason":"stop"}]}`, "[DONE]")},
		{"chat, last event without its blank line", loop.WireChat, events(`{"choices":[{"index":0,"delta":{"content":"hi"}}]}`) + `data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`},
		{"responses, [DONE] before completed", loop.WireResponses, events(`{"type":"response.output_item.done","item":{"type":"message","content":[{"type":"output_text","text":"hi"}]}}`, "[DONE]")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			base := rawServer(t, func(w http.ResponseWriter, r *http.Request) {
				n++
				rawStream(tc.stream)(w, r)
			})
			_, err := ask(t, base, tc.wireAPI, true, 3)
			if err == nil || n != 3 {
				t.Errorf("a cut stream gave err %v after %d attempts; want an error after 3", err, n)
			}
		})
	}
}

// TestWireHostileResponsesStreamsHeld: the Responses event stream's ways
// of ending.
func TestWireHostileResponsesStreamsHeld(t *testing.T) {
	msg := `{"type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"hi"}]}`
	for _, tc := range []struct {
		name, stream, want, wantErr string
	}{
		{"items only in output_item.done", events(`{"type":"response.output_item.done","item":`+msg+`}`, `{"type":"response.completed","response":{"status":"completed","output":[]}}`), "hi", ""},
		{"failed with status completed", events(`{"type":"response.output_item.done","item":`+msg+`}`, `{"type":"response.failed","response":{"status":"completed","output":[`+msg+`]}}`), "", "response.failed"},
		{"error event", events(`{"type":"error","code":"invalid_prompt","message":"the prompt is bad"}`), "", "the prompt is bad"},
		{"incomplete event claiming completed", events(`{"type":"response.incomplete","response":{"status":"completed","output":[` + msg + `]}}`), "hi", ""},
		{"completed with null response", events(`{"type":"response.completed","response":null}`), "", "status"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := ask(t, rawServer(t, rawStream(tc.stream)), loop.WireResponses, true, 1)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || resp.Message.Content != tc.want {
				t.Fatalf("got %q, %v; want %q", resp.Message.Content, err, tc.want)
			}
		})
	}
}

// TestWireHostileChatStreamErrorMember: an error member mid-stream is the
// server's failure, in its words.
func TestWireHostileChatStreamErrorMember(t *testing.T) {
	base := rawServer(t, rawStream(events(`{"choices":[{"index":0,"delta":{"content":"hi"}}]}`, `{"error":{"message":"upstream model crashed","code":"bad_thing"}}`)))
	_, err := ask(t, base, loop.WireChat, true, 1)
	if err == nil || !strings.Contains(err.Error(), "upstream model crashed") {
		t.Fatalf("err %v, want the server's words", err)
	}
}

// TestWireHostileHugeIndexAndDeepJSON: a tool call index near the top of
// int64 and JSON nested past the decoder's depth neither panic nor
// allocate by the number.
func TestWireHostileHugeIndexAndDeepJSON(t *testing.T) {
	base := rawServer(t, rawStream(events(
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":9223372036854775807,"id":"a","function":{"name":"read_file","arguments":"{}"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":-9223372036854775808,"id":"b","function":{"name":"list","arguments":"{}"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`)))
	resp, err := ask(t, base, loop.WireChat, true, 1)
	if err != nil || len(resp.Message.ToolCalls) != 2 {
		t.Fatalf("got %+v, %v", resp.Message.ToolCalls, err)
	}
	deep := strings.Repeat("[", 200000) + strings.Repeat("]", 200000)
	base = rawServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"choices":[{"index":0,"message":{"content":`+deep+`}}]}`)
	})
	if _, err := ask(t, base, loop.WireChat, false, 1); err == nil {
		t.Fatal("deep JSON was taken")
	}
	if _, err := ask(t, rawServer(t, rawStream(events(deep))), loop.WireChat, true, 1); err == nil {
		t.Fatal("deep JSON in a stream was taken")
	}
}

// TestWireHostileRetryAfter: the wait a server asks for is honoured,
// retry-after-ms over Retry-After, whether it came with a 429 or with a
// rate limit reported inside a 200 answer (gateways that answer every
// failure with 200).
func TestWireHostileRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		name    string
		status  int
		headers map[string]string
		want    time.Duration
	}{
		{"429, retry-after-ms over Retry-After", 429, map[string]string{"retry-after-ms": "300", "Retry-After": "0"}, 250 * time.Millisecond},
		{"200 with a rate limit", 200, map[string]string{"Retry-After": "1"}, 900 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			var at []time.Time
			base := rawServer(t, func(w http.ResponseWriter, r *http.Request) {
				n++
				at = append(at, time.Now())
				w.Header().Set("Content-Type", "application/json")
				if n == 1 {
					for k, v := range tc.headers {
						w.Header().Set(k, v)
					}
					w.WriteHeader(tc.status)
					io.WriteString(w, `{"error":{"message":"slow down","code":"rate_limit_exceeded"}}`)
					return
				}
				json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"index": 0, "message": map[string]any{"content": "hi"}, "finish_reason": "stop"}}})
			})
			m := loop.NewOpenAI(loop.OpenAIConfig{BaseURL: base, Retry: loop.RetryPolicy{MaxAttempts: 2, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Second}})
			if _, err := m.Complete(context.Background(), loop.Request{Model: "m", Messages: []loop.Message{{Role: loop.RoleUser, Content: "x"}}}); err != nil {
				t.Fatal(err)
			}
			if d := at[1].Sub(at[0]); d < tc.want {
				t.Errorf("asked again after %v; the server asked for about %v", d, tc.want)
			}
		})
	}
}

// TestWireHostileCrossHostRedirect: a redirect to another host name does
// not carry the key.
func TestWireHostileCrossHostRedirect(t *testing.T) {
	var got string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Get("Authorization")
		io.WriteString(w, `{"choices":[{"index":0,"message":{"content":"hi"},"finish_reason":"stop"}]}`)
	}))
	defer other.Close()
	to := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)
	base := rawServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, to+r.URL.Path, http.StatusPermanentRedirect)
	})
	ask(t, base, loop.WireChat, false, 1)
	if got != "" {
		t.Errorf("the key went to %s: %q", to, got)
	}
}

// TestWireHostileTrickleStream: a stream that sends keep-alive comments
// and never an answer is cut by the request timeout, each attempt.
func TestWireHostileTrickleStream(t *testing.T) {
	base := rawServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for {
			if _, err := io.WriteString(w, ": ping\n\n"); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	})
	m := loop.NewOpenAI(loop.OpenAIConfig{BaseURL: base, Stream: true, Retry: loop.RetryPolicy{MaxAttempts: 2, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond, RequestTimeout: 300 * time.Millisecond}})
	start := time.Now()
	_, err := m.Complete(context.Background(), loop.Request{Model: "m", Messages: []loop.Message{{Role: loop.RoleUser, Content: "x"}}})
	if err == nil || !strings.Contains(err.Error(), "request timeout") || time.Since(start) > 3*time.Second {
		t.Errorf("took %v: %v", time.Since(start), err)
	}
}

// TestWireHostileExtraBodySpellings: an owned key in any letter case or
// JSON escape is refused before anything is sent.
func TestWireHostileExtraBodySpellings(t *testing.T) {
	n := 0
	base := rawServer(t, func(w http.ResponseWriter, r *http.Request) { n++ })
	m := loop.NewOpenAI(loop.OpenAIConfig{BaseURL: base, Retry: loop.RetryPolicy{MaxAttempts: 1}})
	for _, tc := range []struct{ wire, extra string }{
		{loop.WireChat, `{"MODEL":"x"}`}, {loop.WireChat, `{"mod\u0065l":"x"}`}, {loop.WireChat, `{"Stream":true}`},
		{loop.WireChat, `{"messages.0.content":"x"}`}, {loop.WireChat, `{"Tool_Choice":"none"}`}, {loop.WireChat, `{"ſtream":true}`},
		{loop.WireResponses, `{"STORE":true}`}, {loop.WireResponses, `{"Previous_Response_ID":"r"}`}, {loop.WireResponses, `{"instructions":"x"}`},
	} {
		_, err := m.Complete(context.Background(), loop.Request{Model: "m", WireAPI: tc.wire, Params: loop.Params{ExtraBody: json.RawMessage(tc.extra)}, Messages: []loop.Message{{Role: loop.RoleUser, Content: "x"}}})
		if err == nil {
			t.Errorf("%s over %s was sent", tc.extra, tc.wire)
		}
	}
	if n != 0 {
		t.Errorf("%d requests reached the server", n)
	}
}

// TestWireHostileResponsesErrorEventRetried: a Responses error event with
// a server_error code at its top level is asked again.
func TestWireHostileResponsesErrorEventRetried(t *testing.T) {
	n := 0
	base := rawServer(t, func(w http.ResponseWriter, r *http.Request) {
		n++
		if n == 1 {
			rawStream(events(`{"type":"error","code":"server_error","message":"flat words"}`))(w, r)
			return
		}
		rawStream(events(`{"type":"response.completed","response":{"status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"hi"}]}]}}`))(w, r)
	})
	resp, err := ask(t, base, loop.WireResponses, true, 2)
	if err != nil || resp.Message.Content != "hi" || n != 2 {
		t.Errorf("after %d attempts: %q, %v", n, resp.Message.Content, err)
	}
}
