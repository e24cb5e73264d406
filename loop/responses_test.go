package loop_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/loop/looptest"
)

// runOver is run over a wire API, plain or streamed.
func runOver(t *testing.T, h *harnessT, wire string, stream bool, replies []looptest.Reply, params loop.Params, tools ...loop.Tool) (loop.Outcome, *looptest.Server) {
	t.Helper()
	srv := looptest.New(replies)
	t.Cleanup(srv.Close)
	model := loop.NewOpenAI(loop.OpenAIConfig{BaseURL: srv.URL, APIKey: "sk-test", Retry: fast, Stream: stream})
	out := loop.Run(context.Background(), loop.Config{
		Model: model, ModelName: "m", WireAPI: wire, Params: params, Tools: tools,
		Journal: h.journal, ToolOutputDir: filepath.Join(h.dir, "tool-outputs"),
	}, []loop.Message{{Role: loop.RoleSystem, Content: "sys"}, {Role: loop.RoleUser, Content: "task"}})
	return out, srv
}

var wires = []struct {
	name   string
	wire   string
	stream bool
}{
	{"chat", loop.WireChat, false},
	{"chat streamed", loop.WireChat, true},
	{"responses", loop.WireResponses, false},
	{"responses streamed", loop.WireResponses, true},
}

// TestWiresCarryTheSameConversation drives one scenario over both wire
// APIs, plain and streamed: a reasoning turn with tool calls, then an
// answer. The loop sees the same outcome, and over the Responses API the
// reasoning item goes back byte for byte (the server refuses one that
// does not), with nothing stored at the provider.
func TestWiresCarryTheSameConversation(t *testing.T) {
	replies := []looptest.Reply{
		{Reasoning: "the user wants an echo", ToolCalls: []looptest.Call{
			{ID: "c1", Name: "echo", Arguments: `{"text":"one"}`},
			{ID: "c2", Name: "echo", Arguments: `{"text":"two"}`},
		}, Usage: &looptest.Usage{Prompt: 20, Completion: 8, Cached: 4, Reasoning: 6}},
		{Content: "finished: one, two", Expect: []string{"echo: one", "echo: two"}},
	}
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			h := newHarness(t)
			echo := &echoTool{}
			out, srv := runOver(t, h, w.wire, w.stream, replies, loop.Params{}, echo)
			if out.Reason != loop.ReasonCompleted || out.Final.Content != "finished: one, two" || strings.Join(echo.calls, ",") != "one,two" {
				t.Fatalf("outcome %s %v %q, calls %v", out.Reason, out.Err, out.Final.Content, echo.calls)
			}
			first := out.TurnUsage[0]
			if first.PromptTokens != 20 || first.CompletionTokens != 8 || first.CachedTokens != 4 || first.ReasoningTokens != 6 || first.TotalTokens != 28 {
				t.Errorf("first turn's usage = %+v", first)
			}
			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests", len(reqs))
			}
			path := "/v1/chat/completions"
			if w.wire == loop.WireResponses {
				path = "/v1/responses"
			}
			for _, r := range reqs {
				if r.Path != path {
					t.Errorf("request went to %s, want %s", r.Path, path)
				}
			}
			if w.wire != loop.WireResponses {
				return
			}
			var second struct {
				Store              *bool             `json:"store"`
				Include            []string          `json:"include"`
				PreviousResponseID *string           `json:"previous_response_id"`
				Input              []json.RawMessage `json:"input"`
				Tools              []struct {
					Type   string `json:"type"`
					Name   string `json:"name"`
					Strict bool   `json:"strict"`
				} `json:"tools"`
			}
			if err := json.Unmarshal(reqs[1].Body, &second); err != nil {
				t.Fatal(err)
			}
			if second.Store == nil || *second.Store || len(second.Include) != 1 || second.Include[0] != "reasoning.encrypted_content" || second.PreviousResponseID != nil {
				t.Errorf("store %v, include %v, previous_response_id %v: nothing may be left with the provider", second.Store, second.Include, second.PreviousResponseID)
			}
			if len(second.Tools) != 1 || second.Tools[0].Type != "function" || second.Tools[0].Name != "echo" || !second.Tools[0].Strict {
				t.Errorf("tools = %+v, want echo as a strict function", second.Tools)
			}
			var kinds []string
			for _, raw := range second.Input {
				var it struct {
					Type   string `json:"type"`
					Role   string `json:"role"`
					CallID string `json:"call_id"`
				}
				json.Unmarshal(raw, &it)
				kinds = append(kinds, strings.Join(strings.Fields(it.Type+" "+it.Role+" "+it.CallID), " "))
			}
			want := "system|user|reasoning|function_call c1|function_call c2|function_call_output c1|function_call_output c2"
			if got := strings.Join(kinds, "|"); got != want {
				t.Errorf("second input = %s, want %s", got, want)
			}
			if len(out.Messages) < 3 || len(out.Messages[2].Reasoning) != 1 {
				t.Fatalf("the assistant message does not keep its reasoning item: %+v", out.Messages)
			}
			if err := out.Messages[2].Reasoning[0].Check(); err != nil {
				t.Error(err)
			}
			if !strings.Contains(string(reqs[1].Body), string(out.Messages[2].Reasoning[0].Raw)) {
				t.Errorf("the reasoning item did not go back as it came: %s", reqs[1].Body)
			}
		})
	}
}

// TestFinalAnswerKindsOverEveryWire: an answer a job cannot use ends the
// run with an honest reason, its text kept; the Responses API's incomplete
// statuses and refusals end it as the Chat finish reasons do.
func TestFinalAnswerKindsOverEveryWire(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply looptest.Reply
		want  loop.Reason
	}{
		{"cut at the token cap", looptest.Reply{Content: "half an ans", FinishReason: "length"}, loop.ReasonTruncated},
		{"content filter", looptest.Reply{FinishReason: "content_filter"}, loop.ReasonContentFilter},
		{"refusal", looptest.Reply{Refusal: "I cannot help with that."}, loop.ReasonRefused},
		{"empty", looptest.Reply{Content: " \n"}, loop.ReasonEmptyAnswer},
		{"an answer", looptest.Reply{Content: "done"}, loop.ReasonCompleted},
	} {
		for _, w := range wires {
			t.Run(tc.name+"/"+w.name, func(t *testing.T) {
				out, _ := runOver(t, newHarness(t), w.wire, w.stream, []looptest.Reply{tc.reply}, loop.Params{})
				if out.Reason != tc.want {
					t.Fatalf("outcome %s %v, want %s", out.Reason, out.Err, tc.want)
				}
				if out.Final.Content != tc.reply.Content {
					t.Errorf("the final text %q was not kept", tc.reply.Content)
				}
				if tc.reply.Refusal != "" && (out.Err == nil || out.Err.Error() != tc.reply.Refusal) {
					t.Errorf("the refusal is %v, want %q", out.Err, tc.reply.Refusal)
				}
			})
		}
	}
}

// TestCutToolCallsNeverRun: a response cut at the completion token cap
// (Chat finish_reason length, Responses incomplete for
// max_output_tokens) may hold tool calls whose arguments were cut too;
// the loop runs none of them and ends the run as a cut answer would, the
// calls kept in the journal's model.response.
func TestCutToolCallsNeverRun(t *testing.T) {
	for _, tc := range []struct {
		name, finish string
		want         loop.Reason
	}{
		{"length", "length", loop.ReasonTruncated},
		{"content filter", "content_filter", loop.ReasonContentFilter},
	} {
		for _, w := range wires {
			t.Run(tc.name+"/"+w.name, func(t *testing.T) {
				echo := &echoTool{}
				reply := looptest.Reply{Content: "let me", FinishReason: tc.finish, ToolCalls: []looptest.Call{
					{ID: "c1", Name: "echo", Arguments: `{"text":"whole"}`},
					{ID: "c2", Name: "echo", Arguments: `{"text":"cu`},
				}}
				h := newHarness(t)
				out, _ := runOver(t, h, w.wire, w.stream, []looptest.Reply{reply, {Content: "done"}}, loop.Params{}, echo)
				if out.Reason != tc.want {
					t.Fatalf("outcome %s %v, want %s", out.Reason, out.Err, tc.want)
				}
				if len(echo.calls) != 0 {
					t.Errorf("the cut response's calls ran: %q", echo.calls)
				}
				if out.Err == nil || !strings.Contains(out.Err.Error(), "no tool call was run") {
					t.Errorf("the error does not say the calls did not run: %v", out.Err)
				}
				for _, ev := range h.events(t) {
					if ev.Type == "tool.started" {
						t.Errorf("a tool started: %s", ev.Data)
					}
				}
			})
		}
	}
}

// TestResponsesRequestFields: parameters go where the Responses API
// takes them, and what it has no field for is refused, not dropped.
func TestResponsesRequestFields(t *testing.T) {
	temp, effort := 0.5, "low"
	params := loop.Params{Temperature: &temp, MaxCompletionTokens: 300, ReasoningEffort: effort,
		ResponseSchema: json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}}}`)}
	out, srv := runOver(t, newHarness(t), loop.WireResponses, false, []looptest.Reply{{Content: `{"ok":true}`}}, params)
	if out.Reason != loop.ReasonCompleted {
		t.Fatalf("outcome %s %v", out.Reason, out.Err)
	}
	var body struct {
		Temperature     float64 `json:"temperature"`
		MaxOutputTokens int64   `json:"max_output_tokens"`
		Reasoning       struct {
			Effort string `json:"effort"`
		} `json:"reasoning"`
		Text struct {
			Format struct {
				Type   string         `json:"type"`
				Name   string         `json:"name"`
				Schema map[string]any `json:"schema"`
			} `json:"format"`
		} `json:"text"`
	}
	if err := json.Unmarshal(srv.Requests()[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	if body.Temperature != 0.5 || body.MaxOutputTokens != 300 || body.Reasoning.Effort != "low" || body.Text.Format.Type != "json_schema" || body.Text.Format.Schema["type"] != "object" {
		t.Errorf("request = %s", srv.Requests()[0].Body)
	}
	seed := int64(7)
	for _, p := range []loop.Params{{Stop: []string{"END"}}, {Seed: &seed}} {
		out, srv := runOver(t, newHarness(t), loop.WireResponses, false, []looptest.Reply{{Content: "x"}}, p)
		if out.Reason == loop.ReasonCompleted || len(srv.Requests()) != 0 {
			t.Errorf("params %+v: outcome %s after %d requests, want a refusal before any", p, out.Reason, len(srv.Requests()))
		}
	}
}

// TestResponsesRetries: a server error over the Responses API is retried
// as over Chat Completions.
func TestResponsesRetries(t *testing.T) {
	for _, stream := range []bool{false, true} {
		out, srv := runOver(t, newHarness(t), loop.WireResponses, stream, []looptest.Reply{{Status: 503}, {Content: "done"}}, loop.Params{})
		if out.Reason != loop.ReasonCompleted || len(srv.Requests()) != 2 {
			t.Errorf("stream %v: outcome %s %v after %d requests", stream, out.Reason, out.Err, len(srv.Requests()))
		}
	}
}

func TestStrictable(t *testing.T) {
	for _, tc := range []struct {
		schema string
		want   bool
	}{
		{`{"type":"object","additionalProperties":false,"required":["a"],"properties":{"a":{"type":"string"}}}`, true},
		{`{"type":"object","additionalProperties":false,"required":["a"],"properties":{"a":{"type":"string"},"b":{"type":"integer"}}}`, false},
		{`{"type":"object","required":["a"],"properties":{"a":{"type":"string"}}}`, false},
		{`{"type":"object","additionalProperties":false,"required":["a"],"properties":{"a":{"type":"array","items":{"type":"object","additionalProperties":false,"required":[],"properties":{}}}}}`, true},
		{`{"type":"object","additionalProperties":false,"required":["a"],"properties":{"a":{"type":"array"}}}`, false},
		{`{"type":"object","additionalProperties":false,"required":["a"],"properties":{"a":{"anyOf":[{"type":"string"}]}}}`, false},
		{`{"type":"object","additionalProperties":false,"required":["x"],"properties":{"a":{"type":"string"}}}`, false},
	} {
		var m map[string]any
		if err := json.Unmarshal([]byte(tc.schema), &m); err != nil {
			t.Fatal(err)
		}
		if got := loop.Strictable(m); got != tc.want {
			t.Errorf("Strictable(%s) = %v, want %v", tc.schema, got, tc.want)
		}
	}
}
