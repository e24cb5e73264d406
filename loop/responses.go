package loop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/loop/wire"
)

// The wire APIs a model is reached with.
const (
	WireChat      = "chat"      // POST /chat/completions
	WireResponses = "responses" // POST /responses
)

// WireAPIs are the values --wire-api takes.
var WireAPIs = []string{WireChat, WireResponses}

// ReasoningItem is a reasoning item a Responses endpoint returned, kept as
// the exact bytes it sent: its content is encrypted for the provider, so
// harness can only carry it forward, byte for byte, in the next request
// of the run (the provider keeps nothing: store is false). Digest lets a
// reader of the journal check the bytes were not changed.
type ReasoningItem struct {
	Digest artifacts.Digest `json:"digest"`
	Raw    []byte           `json:"raw"`
}

// NewReasoningItem keeps raw with its digest.
func NewReasoningItem(raw []byte) ReasoningItem {
	return ReasoningItem{Digest: artifacts.DigestBytes(raw), Raw: raw}
}

// Check reports whether the bytes are those the digest names.
func (it ReasoningItem) Check() error {
	if got := artifacts.DigestBytes(it.Raw); got != it.Digest {
		return fmt.Errorf("reasoning item digest %s does not match its bytes (%s)", it.Digest, got)
	}
	return nil
}

// respond sends req over the Responses API. Nothing is left with the
// provider (store: false, no previous_response_id): every request carries
// the whole conversation, so a run replays and resumes from its own
// journal.
func (m *OpenAI) respond(ctx context.Context, req Request, extra map[string]json.RawMessage) (Response, error) {
	params, err := toResponseParams(req)
	if err != nil {
		return Response{}, err
	}
	params.Stream = m.stream
	body, err := params.Body(extra)
	if err != nil {
		return Response{}, err
	}
	return exchange(ctx, m, req.Model, wire.ResponsesPath, body, m.respondStreamed, func(r *wire.Response) (Response, error) {
		resp, err := fromResponse(r)
		resp.Message.Reasoning = withoutKey(resp.Message.Reasoning, m.client.Key)
		return resp, err
	})
}

// withoutKey drops the reasoning items that hold the API key, as an
// endpoint that echoes it would send. An item goes back byte for byte or
// not at all, and is kept in the journal and a cassette as opaque bytes
// where no redaction of the key's text reaches; the provider does without
// an item it is not sent.
func withoutKey(items []ReasoningItem, key string) []ReasoningItem {
	if key == "" {
		return items
	}
	return slices.DeleteFunc(items, func(it ReasoningItem) bool {
		return bytes.Contains(it.Raw, []byte(key)) || textHolds(it.Raw, key)
	})
}

// textHolds says whether any string of the JSON raw, member names
// included, holds key once its escapes are read (\u0073k-... spells the
// key as surely as sk-... does). JSON that does not decode is judged by
// its bytes alone.
func textHolds(raw []byte, key string) bool {
	dec := json.NewDecoder(bytes.NewReader(raw))
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if s, ok := tok.(string); ok && strings.Contains(s, key) {
			return true
		}
	}
}

// respondStreamed reads the Responses event stream to its last event. The
// response it ends with is the answer; output items announced one by one
// stand in for an output the final event leaves out, as some servers do.
func (m *OpenAI) respondStreamed(ctx context.Context, body []byte) (*wire.Response, error) {
	var items []json.RawMessage
	var final *wire.Response
	err := m.client.Stream(ctx, wire.ResponsesPath, body, func(e wire.Event) error {
		ev, err := wire.DecodeResponsesEvent(e.Data)
		if err != nil {
			return &wire.DecodeError{Path: wire.ResponsesPath, Err: err, Body: wire.Shorten(string(e.Data))}
		}
		switch ev.Type {
		case "response.output_item.done":
			// The event's buffer is the reader's: keep a copy.
			items = append(items, append(json.RawMessage(nil), ev.Item...))
		case "response.completed", "response.incomplete", "response.failed":
			r := ev.Response
			if r == nil {
				r = &wire.Response{}
			}
			if len(r.Output) == 0 {
				r.Output = items
			}
			// The event and the status must agree that the response is
			// whole: a failed event is a failure whatever status it
			// claims, and an incomplete event is never completed.
			switch {
			case ev.Type == "response.failed" && r.Status != statusFailed:
				return &ProviderError{Message: fmt.Sprintf("the response stream ended with response.failed (status %s): nothing in it was used", r.Status), Answered: true}
			case ev.Type == "response.incomplete" && r.Status == statusCompleted:
				r.Status = statusIncomplete
			}
			final = r
			return errStreamEnd
		case "error":
			return streamError(ev.Code, ev.Message)
		}
		return nil
	})
	if errors.Is(err, errStreamEnd) {
		return final, nil
	}
	var ns *wire.NotStreamError
	if errors.As(err, &ns) && ns.MediaType == "application/json" {
		// A server that does not stream answers with the whole body.
		var r wire.Response
		if json.Unmarshal(ns.Body, &r) == nil {
			return &r, nil
		}
	}
	if err != nil {
		return nil, err
	}
	return nil, &transientError{errors.New("the response stream ended before response.completed")}
}

// errStreamEnd stops reading a stream at its last event.
var errStreamEnd = errors.New("the stream's last event")

// The statuses of a response harness tells apart.
const (
	statusCompleted  = "completed"
	statusIncomplete = "incomplete"
	statusFailed     = "failed"
)

// transientError is a failure worth another attempt that no status or
// code says is one: a stream cut before its end.
type transientError struct{ err error }

func (e *transientError) Error() string { return e.err.Error() }
func (e *transientError) Unwrap() error { return e.err }

// streamError is a failure the provider reported in the response itself.
func streamError(code, msg string) error {
	return &wire.ReportedError{Code: code, Message: msg}
}

// transientCode says whether a failure the provider reported with code
// (its error's code, else its type) is worth another attempt: its server
// failed or is overloaded, or a rate limit, in the words OpenAI,
// Anthropic-compatible servers and vLLM use, or as an HTTP status in
// digits; any other is the request's own and would be met again.
func transientCode(code string) bool {
	switch code {
	case "server_error", "rate_limit_exceeded", "rate_limit_error", "server_is_overloaded", "slow_down",
		"overloaded_error", "internal_error", "api_error", "InternalServerError", "ServiceUnavailableError", "timeout":
		return true
	}
	if n, err := strconv.Atoi(code); err == nil {
		return n == 408 || n == 409 || n == 429 || n >= 500 && n <= 599
	}
	return false
}

func toResponseParams(req Request) (wire.ResponsesRequest, error) {
	p := wire.ResponsesRequest{
		Model: req.Model,
		Store: false,
		// Reasoning stays with the run, encrypted, not with the provider.
		Include: []string{"reasoning.encrypted_content"},
	}
	ids := wireIDs(req.Messages)
	for _, m := range req.Messages {
		switch m.Role {
		case RoleSystem, RoleUser:
			p.Input = append(p.Input, wire.InputMessage{Role: string(m.Role), Content: m.Content})
		case RoleTool:
			p.Input = append(p.Input, wire.FunctionCallOutput{Type: "function_call_output", CallID: resultWireID(ids, m.ToolCallID), Output: m.Content})
		case RoleAssistant:
			for _, it := range m.Reasoning {
				p.Input = append(p.Input, json.RawMessage(it.Raw))
			}
			if m.Content != "" {
				p.Input = append(p.Input, wire.InputMessage{Role: string(RoleAssistant), Content: m.Content})
			}
			for _, c := range m.ToolCalls {
				p.Input = append(p.Input, wire.FunctionCallItem{Type: "function_call", CallID: c.WireID(), Name: c.Name, Arguments: c.Arguments})
			}
		default:
			return p, fmt.Errorf("message role %q is not supported", m.Role)
		}
	}
	for _, t := range req.Tools {
		params, err := toolParameters(t)
		if err != nil {
			return p, err
		}
		p.Tools = append(p.Tools, wire.ResponsesTool{Type: "function", Name: t.Name, Description: t.Description, Parameters: params, Strict: Strictable(params)})
	}
	p.Temperature, p.TopP = req.Params.Temperature, req.Params.TopP
	p.MaxOutputTokens = max(req.Params.MaxCompletionTokens, 0)
	if v := req.Params.ReasoningEffort; v != "" {
		p.Reasoning = &wire.ReasoningConfig{Effort: v}
	}
	if len(req.Params.Stop) > 0 || req.Params.Seed != nil {
		// runopts refuses these before a run starts; a cassette or a
		// caller that gets here must not have them dropped silently.
		return p, errors.New("the Responses API takes no stop sequences and no seed: use --wire-api chat for them")
	}
	if len(req.Params.ResponseSchema) > 0 {
		schema, err := responseSchema(req)
		if err != nil {
			return p, err
		}
		p.Text = &wire.TextConfig{Format: wire.TextFormat{Type: "json_schema", Name: "answer", Schema: schema}}
	}
	return p, nil
}

// Strictable reports whether a tool's parameter schema can be sent with
// strict: true. Strict mode wants every property required and no others
// allowed, at every level; a schema with an optional field would be
// refused, so it goes as it is, validated by harness when called.
func Strictable(schema map[string]any) bool {
	if schema == nil {
		return false
	}
	switch schema["type"] {
	case "object":
		if schema["additionalProperties"] != false {
			return false
		}
		props, _ := schema["properties"].(map[string]any)
		req, _ := schema["required"].([]any)
		if len(req) != len(props) {
			return false
		}
		for _, r := range req {
			name, _ := r.(string)
			sub, ok := props[name].(map[string]any)
			if !ok || !Strictable(sub) {
				return false
			}
		}
		return true
	case "array":
		items, ok := schema["items"].(map[string]any)
		return ok && Strictable(items)
	case "string", "integer", "number", "boolean":
		return true
	}
	return false
}

// fromResponse is the answer a Responses response gives, with the
// finish reasons of the Chat path: length (cut at max_output_tokens, with
// or without function calls), content_filter, incomplete (cut for
// another or no reason), tool_calls, stop, refusal. Only a completed
// response is an answer: any other status (cancelled, in_progress,
// queued, one this code does not know) is a provider error.
func fromResponse(r *wire.Response) (Response, error) {
	switch r.Status {
	case statusFailed:
		var code, msg string
		if r.Error != nil {
			code, msg = r.Error.Code, r.Error.Message
		}
		return Response{}, streamError(code, msg)
	case statusCompleted, statusIncomplete:
	default:
		return Response{}, &ProviderError{Message: fmt.Sprintf("the provider's response has status %s, not completed: nothing in it was used", r.Status), Answered: true}
	}
	out := Response{Message: Message{Role: RoleAssistant}, FinishReason: "stop"}
	var text, refusal, summary strings.Builder
	cutItem := false
	for _, raw := range r.Output {
		typ := wire.ItemType(raw)
		switch typ {
		case "reasoning", "message", "function_call":
		default:
			// An item of a kind harness does not read (a server's own
			// tool, a future kind) is left alone, whatever it holds.
			continue
		}
		var item wire.OutputItem
		if err := json.Unmarshal(raw, &item); err != nil {
			return Response{}, &ProviderError{Message: fmt.Sprintf("the provider's %s item is not one the Responses API gives: %v", typ, err), Answered: true}
		}
		switch typ {
		case "reasoning":
			out.Message.Reasoning = append(out.Message.Reasoning, NewReasoningItem(append([]byte(nil), raw...)))
			for _, s := range item.Summary {
				summary.WriteString(s.Text)
			}
		case "message":
			for _, c := range item.Content {
				switch c.Type {
				case "output_text":
					text.WriteString(c.Text)
				case "refusal":
					refusal.WriteString(c.Refusal)
				}
			}
		case "function_call":
			cutItem = cutItem || (item.Status != "" && item.Status != "completed")
			out.Message.ToolCalls = append(out.Message.ToolCalls, ToolCall{ID: item.CallID, Name: item.Name, Arguments: item.Arguments})
		}
	}
	out.Message.Content, out.Reasoning, out.Refusal = text.String(), summary.String(), refusal.String()
	var incomplete string
	if r.IncompleteDetails != nil {
		incomplete = r.IncompleteDetails.Reason
	}
	// An incomplete response says so even when it holds function calls:
	// the last of them may be cut, and the loop must not run them.
	switch {
	case r.Status == statusIncomplete && incomplete == "max_output_tokens":
		out.FinishReason = "length"
	case r.Status == statusIncomplete && incomplete == "content_filter":
		out.FinishReason = "content_filter"
	case r.Status == statusIncomplete || cutItem:
		out.FinishReason = "incomplete"
	case len(out.Message.ToolCalls) > 0:
		out.FinishReason = "tool_calls"
	case out.Refusal != "":
		out.FinishReason = "refusal"
	}
	u := r.Usage
	out.Usage = Usage{
		PromptTokens:     u.InputTokens,
		CompletionTokens: u.OutputTokens,
		CachedTokens:     u.InputTokensDetails.CachedTokens,
		ReasoningTokens:  u.OutputTokensDetails.ReasoningTokens,
		TotalTokens:      u.TotalTokens,
	}
	return out, nil
}
