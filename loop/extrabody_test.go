package loop

import "testing"

func TestExtraBodyKeys(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		wire string
		ok   bool
	}{
		{`{"top_k": 20, "max_tokens": 5, "chat_template-kwargs": {"a.b": 1}, "0": 1}`, WireChat, true},
		{`{"store": true}`, WireChat, false},
		{`{"top_k": 20}`, WireChat, true},
		{`{"store": true}`, WireResponses, false},
		{`{"STORE": true}`, WireResponses, false},
		{`{"Model": "x"}`, "", false},
		{`{"messages.0.content": "x"}`, WireChat, false},
		{`{"mo\\del": "x"}`, WireChat, false},
		{`{"input.0": "x"}`, WireResponses, false},
		{`{"": 1}`, WireChat, false},
		{`{"a|b": 1}`, WireChat, false},
		{`{"#": 1}`, WireChat, false},
		{`{"k\u212a": 1}`, WireChat, false},
	} {
		_, err := extraBody([]byte(tc.raw), tc.wire)
		if (err == nil) != tc.ok {
			t.Errorf("extraBody(%s, %q) = %v, want ok=%v", tc.raw, tc.wire, err, tc.ok)
		}
	}
}
