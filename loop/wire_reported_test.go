package loop_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/harness-dev/harness/loop"
)

// What servers in use send when they fail inside an answer sent as a
// success, and whether harness reads each failure for what it is.

// okChat is a whole chat answer, as a stream and as one body.
const (
	okChatStream = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"
	okChatBody   = `{"choices":[{"index":0,"message":{"content":"hi"},"finish_reason":"stop"}]}`
)

// failOnce answers the first request with fail (as ctype), every later
// one with the whole answer, and counts the requests.
func failOnce(ctype, fail string, stream bool, n *int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		*n++
		if *n == 1 {
			w.Header().Set("Content-Type", ctype)
			io.WriteString(w, fail)
			return
		}
		if stream {
			rawStream(okChatStream)(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, okChatBody)
	}
}

// TestWireServerFailureShapesRetried: the failure a server reports
// inside a 200 answer says it is the server's in the shape that server
// uses, not always in "code": OpenAI's own mid-stream failure has
// "type":"server_error" and "code":null; vLLM puts the HTTP status in
// "code" as a number (500); Anthropic's OpenAI-compatible stream sends an
// error event whose "type" is overloaded_error. Each is retried.
func TestWireServerFailureShapesRetried(t *testing.T) {
	for _, tc := range []struct {
		name, ctype, fail string
		stream            bool
	}{
		{"openai stream, type server_error, code null", "text/event-stream",
			events(`{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`), true},
		{"openai body 200, type server_error, code null", "application/json",
			`{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`, false},
		{"vllm stream, numeric code 500", "text/event-stream",
			events(`{"error":{"object":"error","message":"EngineCore died","type":"InternalServerError","param":null,"code":500}}`), true},
		{"vllm stream, numeric code 429", "text/event-stream",
			events(`{"error":{"object":"error","message":"too many requests","type":"RateLimitError","param":null,"code":429}}`), true},
		{"anthropic error event, type overloaded_error", "text/event-stream",
			"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			base := rawServer(t, failOnce(tc.ctype, tc.fail, tc.stream, &n))
			resp, err := ask(t, base, loop.WireChat, tc.stream, 2)
			if err != nil || resp.Message.Content != "hi" || n != 2 {
				var pe *loop.ProviderError
				rejected := errors.As(err, &pe) && pe.Rejected
				t.Errorf("after %d attempt(s): %q, %v (rejected %v); the server said it failed: worth another attempt", n, resp.Message.Content, err, rejected)
			}
		})
	}
}

// TestWireErrorBodyLabelledAsStream: a gateway answers a streamed
// request with its error object as the whole body, labelled
// text/event-stream (as it labels every answer to stream: true): the
// answer is judged by its first byte, and the server's words and its
// rejection reach the error.
func TestWireErrorBodyLabelledAsStream(t *testing.T) {
	body := `{"error":{"message":"This model's maximum context length is 8192 tokens","type":"invalid_request_error","code":"context_length_exceeded"}}`
	for _, ctype := range []string{"text/event-stream", "text/event-stream; charset=utf-8"} {
		t.Run(ctype, func(t *testing.T) {
			n := 0
			base := rawServer(t, func(w http.ResponseWriter, r *http.Request) {
				n++
				w.Header().Set("Content-Type", ctype)
				io.WriteString(w, body+"\n")
			})
			_, err := ask(t, base, loop.WireChat, true, 3)
			var pe *loop.ProviderError
			if err == nil || !strings.Contains(err.Error(), "maximum context length") || !errors.As(err, &pe) || !pe.Rejected || n != 1 {
				t.Errorf("after %d attempt(s): %v; want the server's words, a rejection, asked once", n, err)
			}
		})
	}
}

// TestWireRedirectsNeverFollowedHeld: every redirect status, with an
// absolute or relative Location to the same server, streamed or not, and
// for embeddings: the server sees one request, and nothing the redirect
// points at is taken for an answer.
func TestWireRedirectsNeverFollowedHeld(t *testing.T) {
	for _, status := range []int{301, 302, 303, 307, 308} {
		for _, loc := range []string{"/v1/elsewhere", "elsewhere", "//127.0.0.1:1/v1/x"} {
			for _, stream := range []bool{false, true} {
				n := 0
				base := rawServer(t, func(w http.ResponseWriter, r *http.Request) {
					n++
					if strings.HasSuffix(r.URL.Path, "elsewhere") {
						rawStream(okChatStream)(w, r)
						return
					}
					w.Header().Set("Location", loc)
					w.WriteHeader(status)
				})
				resp, err := ask(t, base, loop.WireChat, stream, 1)
				if err == nil || n != 1 || resp.Message.Content != "" {
					t.Errorf("%d to %q (stream %v): %d request(s), %q, %v", status, loc, stream, n, resp.Message.Content, err)
				}
			}
		}
		n := 0
		base := rawServer(t, func(w http.ResponseWriter, r *http.Request) {
			n++
			if strings.HasSuffix(r.URL.Path, "elsewhere") {
				io.WriteString(w, `{"data":[{"index":0,"embedding":[1,0]}]}`)
				return
			}
			w.Header().Set("Location", "elsewhere")
			w.WriteHeader(status)
		})
		m := loop.NewOpenAI(loop.OpenAIConfig{BaseURL: base, Retry: loop.RetryPolicy{MaxAttempts: 1}})
		if vs, err := m.Embed(t.Context(), "e", []string{"a"}); err == nil || n != 1 {
			t.Errorf("embeddings %d: %d request(s), %v, %v", status, n, vs, err)
		}
	}
}

// TestWireRedirectWithoutLocationNotAnAnswer: a 3xx with no Location is
// handed back by Go's client (it has nowhere to go); its body is never
// read as an answer, streamed or not.
func TestWireRedirectWithoutLocationNotAnAnswer(t *testing.T) {
	for _, status := range []int{300, 302, 307} {
		for _, stream := range []bool{false, true} {
			base := rawServer(t, func(w http.ResponseWriter, r *http.Request) {
				if stream {
					w.Header().Set("Content-Type", "text/event-stream")
					w.WriteHeader(status)
					io.WriteString(w, okChatStream)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(status)
				io.WriteString(w, okChatBody)
			})
			resp, err := ask(t, base, loop.WireChat, stream, 1)
			if err == nil {
				t.Errorf("HTTP %d without Location (stream %v) taken as the answer %q", status, stream, resp.Message.Content)
			}
		}
	}
}

// TestWireFailuresWithoutErrorMember: failures sent with 200 and no
// top-level "error" member: vLLM's own error object (older vLLM streams
// it as an event, unwrapped), FastAPI's {"detail":…}, and an event whose
// data says "type":"error" with no event line. Each is the server's
// failure, in its words.
func TestWireFailuresWithoutErrorMember(t *testing.T) {
	for _, tc := range []struct {
		name, ctype, body, words string
		stream                   bool
	}{
		{"vllm object error, streamed", "text/event-stream",
			events(`{"object":"error","message":"max_tokens must be at least 1, got 0.","type":"BadRequestError","param":null,"code":400}`, "[DONE]"), "max_tokens must be at least 1", true},
		{"vllm object error, body", "application/json",
			`{"object":"error","message":"max_tokens must be at least 1, got 0.","type":"BadRequestError","param":null,"code":400}`, "max_tokens must be at least 1", false},
		{"fastapi detail, body", "application/json", `{"detail":"Model m is not loaded"}`, "Model m is not loaded", false},
		{"type error in data, no event line", "text/event-stream",
			events(`{"type":"error","message":"context window exceeded","code":"context_length_exceeded"}`, "[DONE]"), "context window exceeded", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			base := rawServer(t, func(w http.ResponseWriter, r *http.Request) {
				n++
				w.Header().Set("Content-Type", tc.ctype)
				io.WriteString(w, tc.body)
			})
			_, err := ask(t, base, loop.WireChat, tc.stream, 3)
			if err == nil || !strings.Contains(err.Error(), tc.words) {
				t.Errorf("after %d attempt(s): %v; want the server's words %q", n, err, tc.words)
			}
		})
	}
}

// TestWireResponsesFailedConsistentHeld: a Responses failed response
// is read by its error's code the same way streamed or not: server_error
// is asked again, invalid_prompt is a rejection asked once.
func TestWireResponsesFailedConsistentHeld(t *testing.T) {
	okStream := events(`{"type":"response.completed","response":{"status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"hi"}]}]}}`)
	okBody := `{"status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"hi"}]}]}`
	for _, code := range []string{"server_error", "invalid_prompt"} {
		failed := `{"status":"failed","output":[],"error":{"code":"` + code + `","message":"it failed: ` + code + `"}}`
		for _, stream := range []bool{false, true} {
			n := 0
			base := rawServer(t, func(w http.ResponseWriter, r *http.Request) {
				n++
				if stream {
					w.Header().Set("Content-Type", "text/event-stream")
					if n == 1 {
						io.WriteString(w, events(`{"type":"response.failed","response":`+failed+`}`))
					} else {
						io.WriteString(w, okStream)
					}
					return
				}
				w.Header().Set("Content-Type", "application/json")
				if n == 1 {
					io.WriteString(w, failed)
				} else {
					io.WriteString(w, okBody)
				}
			})
			resp, err := ask(t, base, loop.WireResponses, stream, 2)
			var pe *loop.ProviderError
			switch code {
			case "server_error":
				if err != nil || resp.Message.Content != "hi" || n != 2 {
					t.Errorf("%s stream %v: after %d: %q, %v", code, stream, n, resp.Message.Content, err)
				}
			default:
				if err == nil || !errors.As(err, &pe) || !pe.Rejected || n != 1 || !strings.Contains(err.Error(), "it failed") {
					t.Errorf("%s stream %v: after %d: %v", code, stream, n, err)
				}
			}
		}
	}
}

// TestWireKeyEscapedInReasoningItem: an endpoint that echoes the API key
// inside a reasoning item with one character written as a JSON escape
// (sk-wire-ke\u0079) holds the key as surely as one that writes it
// plainly: the item is dropped, as a plain one is, since the journal and
// a cassette keep it as base64, where no redaction reaches.
func TestWireKeyEscapedInReasoningItem(t *testing.T) {
	for _, spelled := range []string{`sk-wire-ke\u0079`, `sk\u002dwire\u002dkey`, `\u0073\u006b-wire-key`} {
		item := `{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"echo ` + spelled + `"}`
		base := rawServer(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"status":"completed","output":[`+item+`,{"type":"message","content":[{"type":"output_text","text":"hi"}]}]}`)
		})
		resp, err := ask(t, base, loop.WireResponses, false, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Message.Reasoning) != 0 {
			t.Errorf("the item holding the key as %s is kept: %s", spelled, resp.Message.Reasoning[0].Raw)
		}
	}
}

// TestWireExtraBodyKeysThatReplaceWhatHarnessSends: keys that replace or
// undo what harness sends and records are refused as owned:
// response_format / text replace --output-schema's schema (part of the
// run's identity), Responses truncation "auto" lets the provider drop the
// start of the conversation the journal records, chat store: true keeps
// the conversation with the provider, web_search_options lets a chat
// model fetch from the web outside the tools the policy allows.
func TestWireExtraBodyKeysThatReplaceWhatHarnessSends(t *testing.T) {
	n := 0
	base := rawServer(t, func(w http.ResponseWriter, r *http.Request) {
		n++
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, okChatBody)
	})
	m := loop.NewOpenAI(loop.OpenAIConfig{BaseURL: base, Retry: loop.RetryPolicy{MaxAttempts: 1}})
	schema := []byte(`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false}`)
	for _, tc := range []struct{ wire, extra string }{
		{loop.WireChat, `{"response_format":{"type":"text"}}`},
		{loop.WireChat, `{"store":true}`},
		{loop.WireChat, `{"web_search_options":{}}`},
		{loop.WireResponses, `{"text":{"format":{"type":"text"}}}`},
		{loop.WireResponses, `{"truncation":"auto"}`},
	} {
		before := n
		m.Complete(t.Context(), loop.Request{Model: "m", WireAPI: tc.wire, Params: loop.Params{ExtraBody: []byte(tc.extra), ResponseSchema: schema}, Messages: []loop.Message{{Role: loop.RoleUser, Content: "x"}}})
		if n != before {
			t.Errorf("%s over %s was sent", tc.extra, tc.wire)
		}
	}
}

// TestWireResponsesErrorEventWithEventLine: OpenAI's Responses stream
// names each event's type on an event line as well as in its data:
// "event: error" then {"type":"error","code":"server_error",...}. The
// code is read from the data either way, and the failure is retried.
func TestWireResponsesErrorEventWithEventLine(t *testing.T) {
	n := 0
	base := rawServer(t, func(w http.ResponseWriter, r *http.Request) {
		n++
		if n == 1 {
			rawStream("event: error\ndata: {\"type\":\"error\",\"code\":\"server_error\",\"message\":\"The server had an error\",\"param\":null,\"sequence_number\":1}\n\n")(w, r)
			return
		}
		rawStream("event: response.completed\n"+events(`{"type":"response.completed","response":{"status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"hi"}]}]}}`))(w, r)
	})
	resp, err := ask(t, base, loop.WireResponses, true, 2)
	if err != nil || resp.Message.Content != "hi" || n != 2 {
		t.Errorf("after %d attempt(s): %q, %v; a server_error is worth another attempt", n, resp.Message.Content, err)
	}
}

// TestWireStreamSniffing: what a streamed request's answer is taken for
// when its label and its first bytes disagree: a JSON answer behind a lot
// of whitespace is that answer, and a proxy's page labelled
// text/event-stream is a failure that quotes it.
func TestWireStreamSniffing(t *testing.T) {
	for _, tc := range []struct{ name, ctype, body, want string }{
		{"json after 600 bytes of whitespace", "application/json", strings.Repeat(" ", 600) + okChatBody, "hi"},
		{"json after 600 newlines, no label", "", strings.Repeat("\n", 600) + okChatBody, "hi"},
		{"page labelled as a stream", "text/event-stream", "<html><head><title>Gateway quota exhausted</title></head></html>", "Gateway quota exhausted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			base := rawServer(t, func(w http.ResponseWriter, r *http.Request) {
				n++
				if tc.ctype == "" {
					w.Header()["Content-Type"] = nil
				} else {
					w.Header().Set("Content-Type", tc.ctype)
				}
				io.WriteString(w, tc.body)
			})
			resp, err := ask(t, base, loop.WireChat, true, 2)
			got := resp.Message.Content
			if err != nil {
				got = err.Error()
			}
			if !strings.Contains(got, tc.want) || n != 1 {
				t.Errorf("after %d attempt(s): %q; want %q, asked once", n, got, tc.want)
			}
		})
	}
}

// TestWireErrorMemberThatSaysNoError: a server that marks success with
// "error": false, "" or {} (an empty error object) beside its answer has
// answered, and its answer is taken.
func TestWireErrorMemberThatSaysNoError(t *testing.T) {
	for _, e := range []string{`false`, `""`, `{}`} {
		base := rawServer(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"choices":[{"index":0,"message":{"content":"hi"},"finish_reason":"stop"}],"error":`+e+`}`)
		})
		resp, err := ask(t, base, loop.WireChat, false, 1)
		if err != nil || resp.Message.Content != "hi" {
			t.Errorf(`"error": %s beside a whole answer: %q, %v`, e, resp.Message.Content, err)
		}
	}
}

// TestWireBodyIsUTF8: JSON text exchanged between systems is UTF-8 (RFC
// 8259 section 8.1), and servers that decode the body as UTF-8 before
// parsing it (Python's json.loads on bytes, FastAPI) refuse anything
// else: an extra body value holding bytes that are no UTF-8 is refused
// rather than sent, and every other string harness sends is made valid by
// encoding/json.
func TestWireBodyIsUTF8(t *testing.T) {
	var got []byte
	base := rawServer(t, func(w http.ResponseWriter, r *http.Request) {
		got, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, okChatBody)
	})
	m := loop.NewOpenAI(loop.OpenAIConfig{BaseURL: base, Retry: loop.RetryPolicy{MaxAttempts: 1}})
	_, err := m.Complete(t.Context(), loop.Request{Model: "m", Params: loop.Params{ExtraBody: []byte("{\"x_knob\":\"a\xffb\"}")}, Messages: []loop.Message{{Role: loop.RoleUser, Content: "x\xfey"}}})
	if err == nil && !utf8.Valid(got) {
		t.Errorf("the body sent is not UTF-8: %q", got[len(got)-40:])
	}
}
