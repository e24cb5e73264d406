package loop

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestCutRequest(t *testing.T) {
	for _, tc := range []struct {
		name, line, req string
		ok              bool
	}{
		{"recorded", `{"type":"harness.cassette-entry","version":1,"key":"k","request":{"model":"m","messages":[{"content":"x"}]},"response":{"finishReason":"stop"}}`, `{"model":"m","messages":[{"content":"x"}]}`, true},
		{"spaces", ` { "request" : [1, {"a": "]}"}] , "key" : "k" } `, `[1, {"a": "]}"}]`, true},
		{"quotes and brackets in strings", `{"request":{"c":"a \"request\":{ \\\\","d":"}}"},"key":"k"}`, `{"c":"a \"request\":{ \\\\","d":"}}"}`, true},
		{"scalar request", `{"request":12,"key":"k"}`, `12`, true},
		{"null request", `{"request":null}`, `null`, true},
		{"no request", `{"type":"harness.cassette-embedding","key":"k"}`, "", false},
		{"two requests", `{"request":1,"request":2}`, "", false},
		{"another case", `{"request":1,"Request":2}`, "", false},
		{"escaped key", `{"requ\u0065st":1}`, "", false},
		{"folded key", "{\"reque\u017ft\":1,\"request\":2}", "", false},
		{"unclosed", `{"request":{"a":1}`, "", false},
		{"unclosed string", `{"request":"abc`, "", false},
		{"trailing", `{"request":1} x`, "", false},
		{"not an object", `["request",1]`, "", false},
		{"empty object", `{}`, "", false},
		{"missing value", `{"request":,"key":"k"}`, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rest, start, end, ok := cutRequest([]byte(tc.line))
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if !ok {
				return
			}
			if req := tc.line[start:end]; req != tc.req {
				t.Errorf("request %q, want %q", req, tc.req)
			}
			if !json.Valid(rest) {
				t.Errorf("rest %q is not JSON", rest)
			}
		})
	}
}

// Whatever the line, decodeStored must decode what encoding/json decodes
// from it, and may accept a line encoding/json refuses only when what is
// wrong lies inside the request, which is decoded later if ever.
func FuzzCassetteLine(f *testing.F) {
	f.Add(`{"type":"harness.cassette-entry","version":1,"key":"k","request":{"model":"m","messages":[]},"response":{"message":{"role":"assistant","content":"hi"}}}`)
	f.Add(`{"request":{"a":"\\\"}"},"Key":"K","response":{"finishReason":"x"}}`)
	f.Add(`{"request":{"a":1]},"key":"k"}`)
	f.Add(`{"request":[1,2],"request":{}}`)
	f.Fuzz(func(t *testing.T, line string) {
		var whole storedLine
		errWhole := json.Unmarshal([]byte(line), &whole)
		var cut storedLine
		span, errCut := decodeStored([]byte(line), &cut)
		if errCut == nil && span[1] > 0 {
			cut.Request = json.RawMessage(line[span[0]:span[1]])
		}
		switch {
		case errWhole == nil && errCut != nil:
			t.Fatalf("encoding/json decodes %q, decodeStored fails: %v", line, errCut)
		case errWhole == nil && !reflect.DeepEqual(whole, cut):
			t.Fatalf("%q: decodeStored %+v, encoding/json %+v", line, cut, whole)
		case errWhole != nil && errCut == nil:
			_, start, end, ok := cutRequest([]byte(line))
			if !ok || json.Valid([]byte(line[start:end])) || line[start:end] != string(cut.Request) {
				t.Fatalf("%q: accepted although encoding/json says %v", line, errWhole)
			}
		}
	})
}
