package loop

import (
	"encoding/json"
	"fmt"
	"testing"
)

// The cache must give RequestKey's answer whatever happens to the history:
// growth, an edited earlier message, a rewritten tool call, a shorter
// history, other tools or model.
func TestKeyCacheMatchesRequestKey(t *testing.T) {
	tools := []ToolSpec{{Name: "read_file", Description: "reads", Parameters: json.RawMessage(`{ "type": "object" }`)}}
	msgs := []Message{{Role: RoleSystem, Content: "sys <&> \"quoted\" \"messages\":[]"}, {Role: RoleUser, Content: "task"}}
	var k KeyCache
	check := func(step string, req Request) {
		t.Helper()
		want, err := RequestKey(req)
		if err != nil {
			t.Fatal(err)
		}
		got, err := k.Key(req)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s: cached key %s, RequestKey %s", step, got, want)
		}
	}
	req := Request{Model: `m "messages":[]`, Messages: msgs, Tools: tools}
	check("first", req)
	for i := range 5 {
		call := ToolCall{ID: fmt.Sprint("c", i), Name: "read_file", Arguments: `{"path":"a"}`}
		req.Messages = append(req.Messages, Message{Role: RoleAssistant, ToolCalls: []ToolCall{call}}, Message{Role: RoleTool, Content: "out", ToolCallID: call.ID})
		check(fmt.Sprint("turn ", i), req)
	}
	req.Messages[1].Content = "edited task"
	check("earlier message edited", req)
	req.Messages[2].ToolCalls[0].Arguments = `{"path":"b"}`
	check("tool call rewritten in place", req)
	req.Messages = req.Messages[:3]
	check("history cut", req)
	req.Tools[0].Parameters = json.RawMessage(`{"type":"object","x":1}`)
	check("tool parameters rewritten", req)
	req.Tools = append(req.Tools, ToolSpec{Name: "write_file", Parameters: json.RawMessage(`{}`)})
	check("a tool added", req)
	req.Params.Stop = []string{"a"}
	check("params set", req)
	req.Params.Stop[0] = "b"
	check("params rewritten in place", req)
	req.Messages = append(req.Messages, Message{Role: RoleUser, Content: "more"})
	check("grown after a change of head", req)
	req.Model = "other"
	req.Tools = nil
	req.Params.Temperature = new(float64)
	check("model, tools and params changed", req)
	req.Messages = nil
	check("no messages", req)
}

func FuzzKeyCache(f *testing.F) {
	f.Add("m", "system", "user", "tool out", `{"a":1}`, uint8(2))
	f.Add(`"messages":[]`, "\u2028<script>", "\xff", "", "not json", uint8(0))
	f.Fuzz(func(t *testing.T, model, sys, user, out, args string, cut uint8) {
		var k KeyCache
		req := Request{Model: model, Messages: []Message{{Role: RoleSystem, Content: sys}, {Role: RoleUser, Content: user}}}
		for i := range 3 {
			call := ToolCall{ID: fmt.Sprint(i), Name: "t", Arguments: args}
			req.Messages = append(req.Messages, Message{Role: RoleAssistant, ToolCalls: []ToolCall{call}}, Message{Role: RoleTool, Content: out, ToolCallID: call.ID})
			want, err1 := RequestKey(req)
			got, err2 := k.Key(req)
			if (err1 == nil) != (err2 == nil) || got != want {
				t.Fatalf("cached %s (%v), RequestKey %s (%v)", got, err2, want, err1)
			}
		}
		req.Messages = req.Messages[:int(cut)%len(req.Messages)]
		want, _ := RequestKey(req)
		if got, _ := k.Key(req); got != want {
			t.Fatalf("after a cut: cached %s, RequestKey %s", got, want)
		}
	})
}
