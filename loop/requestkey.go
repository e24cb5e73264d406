package loop

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/harness-dev/harness/artifacts"
)

// KeyCache computes RequestKey for a conversation that grows by appending,
// encoding each message once instead of the whole conversation on every
// turn (which made a long run quadratic). A message is reused only while
// it is equal to the one encoded, so a changed history is simply encoded
// again: the key is always RequestKey's. A KeyCache is not safe for
// concurrent use.
type KeyCache struct {
	msgs []Message
	enc  [][]byte
}

// messagesField is how the encoding of a Request with no messages shows
// the field. Inside a JSON string every quote is escaped, so these bytes
// can only be the field itself.
var messagesField = []byte(`"messages":[]`)

// Key returns RequestKey(req).
func (k *KeyCache) Key(req Request) (artifacts.Digest, error) {
	c, err := canonical(req)
	if err != nil {
		return "", err
	}
	msgs := c.Messages
	c.Messages = []Message{}
	head, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("request key: %w", err)
	}
	at := bytes.Index(head, messagesField)
	if at < 0 {
		return RequestKey(req)
	}
	keep := 0
	for keep < len(msgs) && keep < len(k.msgs) && sameMessage(msgs[keep], k.msgs[keep]) {
		keep++
	}
	k.msgs, k.enc = k.msgs[:keep], k.enc[:keep]
	for _, m := range msgs[keep:] {
		b, err := json.Marshal(m)
		if err != nil {
			return "", fmt.Errorf("request key: %w", err)
		}
		k.msgs = append(k.msgs, cloneMessage(m))
		k.enc = append(k.enc, b)
	}
	h := artifacts.NewHasher()
	h.Write(head[:at])
	h.Write([]byte(`"messages":[`))
	for i, b := range k.enc {
		if i > 0 {
			h.Write([]byte{','})
		}
		h.Write(b)
	}
	h.Write([]byte{']'})
	h.Write(head[at+len(messagesField):])
	return h.Digest(), nil
}

func sameMessage(a, b Message) bool {
	return a.Role == b.Role && a.Content == b.Content && a.ToolCallID == b.ToolCallID && slices.Equal(a.ToolCalls, b.ToolCalls)
}

// cloneMessage keeps the cache's copy apart from a caller that later
// rewrites a tool call in place.
func cloneMessage(m Message) Message {
	m.ToolCalls = slices.Clone(m.ToolCalls)
	return m
}
