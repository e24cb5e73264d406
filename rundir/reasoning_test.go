package rundir

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/record"
)

// A model.response's reasoning items go back to the provider on resume:
// the rebuilt conversation carries them as journaled, and bytes that are
// not the ones their digest names are refused as tampering, even on a
// line whose chain verified.
func TestReasoningItemsAreCheckedBeforeReuse(t *testing.T) {
	item := loop.NewReasoningItem([]byte(`{"id":"rs_1","type":"reasoning","encrypted_content":"c2VhbGVk","summary":[]}`))
	for _, tc := range []struct {
		name   string
		change func(*loop.ReasoningItem)
		ok     bool
	}{
		{"intact", func(*loop.ReasoningItem) {}, true},
		{"bytes changed", func(it *loop.ReasoningItem) {
			it.Raw = []byte(`{"id":"rs_1","type":"reasoning","encrypted_content":"Zm9yZ2Vk","summary":[]}`)
		}, false},
		{"digest changed", func(it *loop.ReasoningItem) { it.Digest = artifacts.DigestString("other") }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			it := item
			it.Raw = append([]byte(nil), item.Raw...)
			tc.change(&it)
			data, err := json.Marshal(record.ModelResponse{Turn: 1, ReasoningItems: []loop.ReasoningItem{it}, ToolCalls: []loop.ToolCall{}})
			if err != nil {
				t.Fatal(err)
			}
			st := &State{}
			err = st.apply(t.TempDir(), 3, artifacts.Event{Type: record.EventModelResponse, Data: data})
			if tc.ok {
				if err != nil || len(st.Messages) != 1 || string(st.Messages[0].Reasoning[0].Raw) != string(item.Raw) {
					t.Fatalf("err %v, messages %+v", err, st.Messages)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "reasoning item digest") {
				t.Fatalf("err = %v, want a refusal naming the reasoning item", err)
			}
		})
	}
}
