package loop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/harness-dev/harness/artifacts"
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
func (m *OpenAI) respond(ctx context.Context, req Request, extra []option.RequestOption) (Response, error) {
	params, err := toResponseParams(req)
	if err != nil {
		return Response{}, err
	}
	var resp Response
	err = m.retry.do(ctx, m.on, req.Model, m.shown, func(ctx context.Context) error {
		var r *responses.Response
		if m.stream {
			r, err = m.respondStreamed(ctx, params, extra)
		} else {
			r, err = m.resp.New(ctx, params, extra...)
		}
		if err != nil {
			return err
		}
		resp, err = fromResponse(r)
		return err
	})
	return resp, err
}

// respondStreamed reads the Responses event stream to its last event. The
// response it ends with is the answer; output items announced one by one
// stand in for an output the final event leaves out, as some servers do.
func (m *OpenAI) respondStreamed(ctx context.Context, params responses.ResponseNewParams, extra []option.RequestOption) (*responses.Response, error) {
	stream := m.resp.NewStreaming(ctx, params, extra...)
	defer stream.Close()
	var items []responses.ResponseOutputItemUnion
	for stream.Next() {
		ev := stream.Current()
		switch ev.Type {
		case "response.output_item.done":
			items = append(items, ev.Item)
		case "response.completed", "response.incomplete", "response.failed":
			r := ev.Response
			if len(r.Output) == 0 {
				r.Output = items
			}
			// The event and the status must agree that the response is
			// whole: a failed event is a failure whatever status it
			// claims, and an incomplete event is never completed.
			switch {
			case ev.Type == "response.failed" && r.Status != responses.ResponseStatusFailed:
				return nil, &ProviderError{Message: fmt.Sprintf("the response stream ended with response.failed (status %s): nothing in it was used", r.Status)}
			case ev.Type == "response.incomplete" && r.Status == responses.ResponseStatusCompleted:
				r.Status = responses.ResponseStatusIncomplete
			}
			return &r, nil
		case "error":
			return nil, streamError(ev.Code, ev.Message)
		}
	}
	if err := stream.Err(); err != nil {
		return nil, err
	}
	return nil, &transientError{errors.New("the response stream ended before response.completed")}
}

// transientError is a failure the provider reported inside a response
// that another attempt may not meet (its server failed, a rate limit).
type transientError struct{ err error }

func (e *transientError) Error() string { return e.err.Error() }
func (e *transientError) Unwrap() error { return e.err }

// streamError is a failure the provider reported in the response itself;
// a server error or rate limit is worth another attempt.
func streamError(code, msg string) error {
	err := &ProviderError{Code: code, Message: msg}
	switch code {
	case "server_error", "rate_limit_exceeded", "server_is_overloaded", "slow_down":
		return &transientError{err}
	}
	return err
}

func toResponseParams(req Request) (responses.ResponseNewParams, error) {
	p := responses.ResponseNewParams{
		Model: shared.ResponsesModel(req.Model),
		Store: openai.Bool(false),
		// Reasoning stays with the run, encrypted, not with the provider.
		Include: []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent},
	}
	var input responses.ResponseInputParam
	ids := wireIDs(req.Messages)
	for _, m := range req.Messages {
		switch m.Role {
		case RoleSystem, RoleUser:
			input = append(input, responses.ResponseInputItemParamOfMessage(m.Content, responses.EasyInputMessageRole(m.Role)))
		case RoleTool:
			out := responses.ResponseInputItemParamOfFunctionCallOutput(m.Content)
			out.OfFunctionCallOutput.CallID = openai.String(resultWireID(ids, m.ToolCallID))
			input = append(input, out)
		case RoleAssistant:
			for _, it := range m.Reasoning {
				r := param.Override[responses.ResponseReasoningItemParam](json.RawMessage(it.Raw))
				input = append(input, responses.ResponseInputItemUnionParam{OfReasoning: &r})
			}
			if m.Content != "" {
				input = append(input, responses.ResponseInputItemParamOfMessage(m.Content, responses.EasyInputMessageRoleAssistant))
			}
			for _, c := range m.ToolCalls {
				input = append(input, responses.ResponseInputItemParamOfFunctionCall(c.Arguments, c.WireID(), c.Name))
			}
		default:
			return p, fmt.Errorf("message role %q is not supported", m.Role)
		}
	}
	p.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: input}
	for _, t := range req.Tools {
		var params map[string]any
		if len(t.Parameters) > 0 {
			if err := json.Unmarshal(t.Parameters, &params); err != nil {
				return p, fmt.Errorf("tool %s: parameters: %w", t.Name, err)
			}
		}
		p.Tools = append(p.Tools, responses.ToolUnionParam{OfFunction: &responses.FunctionToolParam{
			Name:        t.Name,
			Description: openai.String(t.Description),
			Parameters:  params,
			Strict:      openai.Bool(Strictable(params)),
		}})
	}
	if v := req.Params.Temperature; v != nil {
		p.Temperature = openai.Float(*v)
	}
	if v := req.Params.TopP; v != nil {
		p.TopP = openai.Float(*v)
	}
	if v := req.Params.MaxCompletionTokens; v > 0 {
		p.MaxOutputTokens = openai.Int(v)
	}
	if v := req.Params.ReasoningEffort; v != "" {
		p.Reasoning = shared.ReasoningParam{Effort: shared.ReasoningEffort(v)}
	}
	if len(req.Params.Stop) > 0 || req.Params.Seed != nil {
		// runopts refuses these before a run starts; a cassette or a
		// caller that gets here must not have them dropped silently.
		return p, errors.New("the Responses API takes no stop sequences and no seed: use --wire-api chat for them")
	}
	if len(req.Params.ResponseSchema) > 0 {
		var schema map[string]any
		if err := json.Unmarshal(req.Params.ResponseSchema, &schema); err != nil {
			return p, fmt.Errorf("response schema: %w", err)
		}
		p.Text = responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigParamOfJSONSchema("answer", schema)}
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
func fromResponse(r *responses.Response) (Response, error) {
	switch r.Status {
	case responses.ResponseStatusFailed:
		return Response{}, streamError(string(r.Error.Code), r.Error.Message)
	case responses.ResponseStatusCompleted, responses.ResponseStatusIncomplete:
	default:
		return Response{}, &ProviderError{Message: fmt.Sprintf("the provider's response has status %s, not completed: nothing in it was used", r.Status)}
	}
	out := Response{Message: Message{Role: RoleAssistant}, FinishReason: "stop"}
	var text, refusal, summary strings.Builder
	cutItem := false
	for _, item := range r.Output {
		switch item.Type {
		case "reasoning":
			raw := item.RawJSON()
			if raw == "" {
				b, err := json.Marshal(item)
				if err != nil {
					return Response{}, fmt.Errorf("reasoning item: %w", err)
				}
				raw = string(b)
			}
			out.Message.Reasoning = append(out.Message.Reasoning, NewReasoningItem([]byte(raw)))
			for _, s := range item.AsReasoning().Summary {
				summary.WriteString(s.Text)
			}
		case "message":
			for _, c := range item.AsMessage().Content {
				switch c.Type {
				case "output_text":
					text.WriteString(c.Text)
				case "refusal":
					refusal.WriteString(c.Refusal)
				}
			}
		case "function_call":
			fc := item.AsFunctionCall()
			cutItem = cutItem || (fc.Status != "" && fc.Status != responses.ResponseFunctionToolCallStatusCompleted)
			out.Message.ToolCalls = append(out.Message.ToolCalls, ToolCall{ID: fc.CallID, Name: fc.Name, Arguments: fc.Arguments})
		}
	}
	out.Message.Content, out.Reasoning, out.Refusal = text.String(), summary.String(), refusal.String()
	// An incomplete response says so even when it holds function calls:
	// the last of them may be cut, and the loop must not run them.
	switch {
	case r.Status == responses.ResponseStatusIncomplete && r.IncompleteDetails.Reason == "max_output_tokens":
		out.FinishReason = "length"
	case r.Status == responses.ResponseStatusIncomplete && r.IncompleteDetails.Reason == "content_filter":
		out.FinishReason = "content_filter"
	case r.Status == responses.ResponseStatusIncomplete || cutItem:
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
