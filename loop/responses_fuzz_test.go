package loop

import (
	"encoding/json"
	"testing"

	"github.com/harness-dev/harness/loop/wire"
)

// FuzzFromResponse: whatever a Responses endpoint sends that decodes, the
// answer is read without a panic, and every reasoning item it keeps is
// JSON with its digest.
func FuzzFromResponse(f *testing.F) {
	f.Add([]byte(`{"status":"completed","output":[{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"t"}],"encrypted_content":"e"},{"type":"function_call","call_id":"c","name":"n","arguments":"{}"}],"usage":{"input_tokens":1,"output_tokens":2,"total_tokens":3}}`))
	f.Add([]byte(`{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[{"type":"message","content":[{"type":"output_text","text":"half"}]}]}`))
	f.Add([]byte(`{"status":"failed","error":{"code":"server_error","message":"boom"}}`))
	f.Add([]byte(`{"output":[{"type":"message","content":[{"type":"refusal","refusal":"no"}]},{"type":"mystery"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var r wire.Response
		if json.Unmarshal(data, &r) != nil {
			return
		}
		out, err := fromResponse(&r)
		if err != nil {
			return
		}
		for _, it := range out.Message.Reasoning {
			if it.Check() != nil || !json.Valid(it.Raw) {
				t.Fatalf("reasoning item %s", it.Raw)
			}
		}
		if out.FinishReason == "" {
			t.Fatal("no finish reason")
		}
	})
}
