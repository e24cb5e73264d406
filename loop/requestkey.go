package loop

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/harness-dev/harness/artifacts"
)

// KeyCache computes RequestKey for a conversation that grows by appending.
// Each turn's request is the previous one with a few more messages, so the
// cache keeps the digest state after the last message it has seen and
// hashes only what is new; the rest of the request (model, tools,
// parameters) is encoded again only when it changed. A message is reused
// only while it is equal to the one hashed, so a changed history is simply
// hashed again: the key is always RequestKey's. A KeyCache is not safe for
// concurrent use.
type KeyCache struct {
	// What the head was encoded from: the model, the tools (their
	// parameters copied, since a caller may reuse the bytes) and the
	// encoded parameters.
	wire   string
	model  string
	tools  []ToolSpec
	params []byte
	// The canonical encoding of the request without messages, cut where
	// the messages go: prefix ends with `"messages":[`, suffix starts
	// after the closing bracket.
	prefix, suffix []byte
	headOK         bool

	msgs []Message
	// state has hashed prefix and msgs, with their separators.
	state *artifacts.Hasher
}

// messagesField is how the encoding of a Request with no messages shows
// the field. Inside a JSON string every quote is escaped, so these bytes
// can only be the field itself.
var messagesField = []byte(`"messages":[]`)

// Key returns RequestKey(req).
func (k *KeyCache) Key(req Request) (artifacts.Digest, error) {
	params, err := json.Marshal(req.Params)
	if err != nil {
		return "", fmt.Errorf("request key: %w", err)
	}
	if !k.headOK || req.WireAPI != k.wire || req.Model != k.model || !bytes.Equal(params, k.params) || !sameTools(req.Tools, k.tools) {
		if err := k.encodeHead(req, params); err != nil {
			return "", err
		}
		if !k.headOK {
			return RequestKey(req)
		}
	}
	keep := 0
	for keep < len(req.Messages) && keep < len(k.msgs) && sameMessage(req.Messages[keep], k.msgs[keep]) {
		keep++
	}
	if keep < len(k.msgs) || k.state == nil {
		k.msgs, k.state = k.msgs[:0], artifacts.NewHasher()
		k.state.Write(k.prefix)
		keep = 0
	}
	for _, m := range req.Messages[keep:] {
		b, err := json.Marshal(m)
		if err != nil {
			k.msgs, k.state = k.msgs[:0], nil
			return "", fmt.Errorf("request key: %w", err)
		}
		if len(k.msgs) > 0 {
			k.state.Write([]byte{','})
		}
		k.state.Write(b)
		k.msgs = append(k.msgs, cloneMessage(m))
	}
	h := k.state.Clone()
	h.Write([]byte{']'})
	h.Write(k.suffix)
	return h.Digest(), nil
}

// encodeHead encodes the request without its messages and starts the
// message state afresh. headOK stays false if the encoding does not show
// the messages field where expected (then Key falls back to RequestKey).
func (k *KeyCache) encodeHead(req Request, params []byte) error {
	k.headOK, k.msgs, k.state = false, k.msgs[:0], nil
	c, err := canonical(req)
	if err != nil {
		return err
	}
	c.Messages = []Message{}
	head, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("request key: %w", err)
	}
	at := bytes.Index(head, messagesField)
	if at < 0 {
		return nil
	}
	k.prefix = head[:at+len(messagesField)-1]
	k.suffix = head[at+len(messagesField):]
	k.wire, k.model, k.params = req.WireAPI, req.Model, params
	k.tools = k.tools[:0]
	for _, t := range req.Tools {
		t.Parameters = slices.Clone(t.Parameters)
		k.tools = append(k.tools, t)
	}
	k.headOK = true
	return nil
}

func sameTools(a, b []ToolSpec) bool {
	return slices.EqualFunc(a, b, func(x, y ToolSpec) bool {
		return x.Name == y.Name && x.Description == y.Description && bytes.Equal(x.Parameters, y.Parameters)
	})
}

func sameMessage(a, b Message) bool {
	return a.Role == b.Role && a.Content == b.Content && a.ToolCallID == b.ToolCallID && slices.Equal(a.ToolCalls, b.ToolCalls) &&
		slices.EqualFunc(a.Reasoning, b.Reasoning, func(x, y ReasoningItem) bool { return x.Digest == y.Digest && bytes.Equal(x.Raw, y.Raw) })
}

// cloneMessage keeps the cache's copy apart from a caller that later
// rewrites a tool call in place.
func cloneMessage(m Message) Message {
	m.ToolCalls = slices.Clone(m.ToolCalls)
	m.Reasoning = slices.Clone(m.Reasoning)
	return m
}
