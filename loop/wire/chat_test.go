package wire

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func accumulate(t *testing.T, chunks ...string) *ChatAccumulator {
	t.Helper()
	var a ChatAccumulator
	for _, c := range chunks {
		chunk, err := DecodeChunk([]byte(c))
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		a.Add(chunk)
	}
	return &a
}

func callsOf(m AnswerMessage) string {
	var s []string
	for _, c := range m.ToolCalls {
		s = append(s, fmt.Sprintf("%s %s %s", c.ID, c.Function.Name, c.Function.Arguments))
	}
	return strings.Join(s, "; ")
}

func TestChatAccumulator(t *testing.T) {
	for _, tc := range []struct {
		name    string
		chunks  []string
		content string
		calls   string
		finish  string
	}{
		{"text in parts", []string{
			`{"choices":[{"index":0,"delta":{"content":"hel"}}]}`,
			`{"choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}]}`,
		}, "hello", "", "stop"},
		{"calls by index, arguments in parts", []string{
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"read","arguments":"{\"p"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"b","function":{"name":"write","arguments":"{}"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\":1}"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		}, "", `a read {"p":1}; b write {}`, "tool_calls"},
		{"index -1 is the only call", []string{
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":-1,"id":"a","function":{"name":"read","arguments":"{"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":-1,"function":{"arguments":"}"}}]},"finish_reason":"tool_calls"}]}`,
		}, "", "a read {}", "tool_calls"},
		{"whole calls without index", []string{
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"a","function":{"name":"read","arguments":"{}"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"b","function":{"name":"write","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`,
		}, "", "a read {}; b write {}", "tool_calls"},
		{"a repeated name is not doubled", []string{
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"read","arguments":"{"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"read","arguments":"}"}}]},"finish_reason":"tool_calls"}]}`,
		}, "", "a read {}", "tool_calls"},
		{"other choices are not the answer", []string{
			`{"choices":[{"index":1,"delta":{"content":"other"},"finish_reason":"stop"}]}`,
			`{"choices":[{"index":0,"delta":{"content":"mine"}}]}`,
		}, "mine", "", ""},
		{"the first finish reason counts", []string{
			`{"choices":[{"index":0,"delta":{"content":"cut"},"finish_reason":"length"}]}`,
			`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		}, "cut", "", "length"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := accumulate(t, tc.chunks...)
			m := a.Message()
			if m.Content != tc.content || callsOf(m) != tc.calls || a.FinishReason != tc.finish {
				t.Errorf("content %q, calls %q, finish %q; want %q, %q, %q", m.Content, callsOf(m), a.FinishReason, tc.content, tc.calls, tc.finish)
			}
		})
	}
}

// TestChatAccumulatorKeepsTheLastUsage: usage comes in the stream's last
// chunk, which has no choices.
func TestChatAccumulatorKeepsTheLastUsage(t *testing.T) {
	a := accumulate(t,
		`{"choices":[{"index":0,"delta":{"content":"x","reasoning_content":"think"},"finish_reason":"stop"}],"usage":null}`,
		`{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7,"prompt_tokens_details":{"cached_tokens":1}}}`,
	)
	if a.Usage.TotalTokens != 7 || a.Usage.PromptTokensDetails.CachedTokens != 1 || a.Message().ReasoningContent != "think" {
		t.Errorf("usage %+v, reasoning %q", a.Usage, a.Message().ReasoningContent)
	}
}

// TestSparseIndexesCostNothing: a call index of 2^62 makes one call, not
// a slice that long.
func TestSparseIndexesCostNothing(t *testing.T) {
	a := accumulate(t, `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":4611686018427387904,"id":"a","function":{"name":"n","arguments":"{}"}}]}}]}`)
	if got := callsOf(a.Message()); got != "a n {}" {
		t.Errorf("calls %q", got)
	}
}

func TestEncode(t *testing.T) {
	b, err := Encode(ChatRequest{Model: "m", Temperature: new(0.5)}, nil, map[string]json.RawMessage{"top_k": []byte("20"), "temperature": []byte("0.1")})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(b); got != `{"messages":null,"model":"m","temperature":0.1,"top_k":20}` {
		t.Errorf("body %s", got)
	}
	// An item the server sent goes back as its bytes, spacing and <, >, &
	// included; text harness writes is not escaped for HTML either.
	item := "{ \"type\": \"reasoning\",\n \"text\": \"a < b && c > d\" }"
	b, err = ResponsesRequest{Model: "m<", Input: []any{InputMessage{Role: "user", Content: "x & y"}, json.RawMessage(item)}}.Body(map[string]json.RawMessage{"top_k": []byte(" 20 ")})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"input":[{"role":"user","content":"x & y"},` + item + `],"model":"m<","store":false,"top_k": 20 }`
	if string(b) != want {
		t.Errorf("body\n%s\nwant\n%s", b, want)
	}
	if !json.Valid(b) {
		t.Error("the body is not JSON")
	}
	if _, err := (ResponsesRequest{Input: []any{json.RawMessage("{")}}).Body(nil); err == nil {
		t.Error("an item that is not JSON was sent")
	}
}

func TestErrorMessage(t *testing.T) {
	for _, tc := range []struct{ body, msg, code string }{
		{`{"error":{"message":"overloaded","code":"server_error"}}`, "overloaded", "server_error"},
		{`{"error":{"message":"m","code":429}}`, "m", "429"},
		{`{"error":"not loaded"}`, "not loaded", ""},
		{`{"object":"error","message":"no such model"}`, "no such model", ""},
		{`{"detail":[{"loc":["body"],"msg":"bad"}]}`, `[{"loc":["body"],"msg":"bad"}]`, ""},
		{`<html><title> 502 Bad Gateway </title></html>`, "502 Bad Gateway", ""},
		{"  plain\n text ", "plain text", ""},
	} {
		msg, code := ErrorMessage([]byte(tc.body))
		if msg != tc.msg || code != tc.code {
			t.Errorf("%s: %q %q, want %q %q", tc.body, msg, code, tc.msg, tc.code)
		}
	}
}
