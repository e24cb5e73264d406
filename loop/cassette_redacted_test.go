package loop

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/harness-dev/harness/artifacts"
)

// TestCassetteMatchesRedacted: a replayed request matches a recorded one
// whose secrets were redacted when "[redacted]" stands for text inside
// one JSON string and every other byte is the same.
func TestCassetteMatchesRedacted(t *testing.T) {
	const key = "sk-live-0123456789abcdef"
	req := func(texts ...string) Request {
		r := Request{Model: "m"}
		for _, s := range texts {
			r.Messages = append(r.Messages, Message{Role: RoleUser, Content: s})
		}
		return r
	}
	recorded := func(r Request) json.RawMessage {
		c, err := canonical(r)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(c)
		return artifacts.NewRedactor(key).Bytes(b)
	}
	for _, tc := range []struct {
		name     string
		rec, got Request
		want     bool
	}{
		{"same key", req("key=" + key), req("key=" + key), true},
		{"twice", req(key+" and "+key, "x"), req(key+" and "+key, "x"), true},
		{"escaped in arguments", req(`{"a": "` + key + `\u0066"}`), req(`{"a": "` + key + `\u0066"}`), true},
		{"other text around", req("key=" + key), req("token=" + key), false},
		{"other message", req("key="+key, "a"), req("key="+key, "b"), false},
		{"any text in its place", req("key="+key, "a"), req("key=x", "a"), true},
		{"an escaped quote is string text", req("key=" + key), req("key=\"" + key), true},
		{"not across strings", req("key="+key, "b"), req("key=x", "y", "b"), false},
		{"empty span", req("key=" + key + "!"), req("key=!"), false},
		{"nothing redacted", req("a"), req("b"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Cassette{entries: []storedEntry{{Request: recorded(tc.rec)}}, used: []bool{false}}
			if got := c.matchesRedacted(0, tc.got); got != tc.want {
				t.Errorf("matchesRedacted = %v, want %v (recorded %s)", got, tc.want, strings.TrimSpace(string(recorded(tc.rec))))
			}
		})
	}
}
