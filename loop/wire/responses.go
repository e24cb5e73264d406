package wire

import "encoding/json"

// ResponsesPath is where the Responses API is posted.
const ResponsesPath = "responses"

// ResponsesRequest is the body of POST /responses.
type ResponsesRequest struct {
	Model string `json:"model"`
	// Input items are InputMessage, FunctionCallItem, FunctionCallOutput,
	// or an item the server sent, as its bytes (json.RawMessage). They are
	// sent by Body, which writes those bytes as they are.
	Input           []any            `json:"-"`
	Tools           []ResponsesTool  `json:"tools,omitempty"`
	Store           bool             `json:"store"`
	Include         []string         `json:"include,omitempty"`
	Temperature     *float64         `json:"temperature,omitempty"`
	TopP            *float64         `json:"top_p,omitempty"`
	MaxOutputTokens int64            `json:"max_output_tokens,omitempty"`
	Reasoning       *ReasoningConfig `json:"reasoning,omitempty"`
	Text            *TextConfig      `json:"text,omitempty"`
	Stream          bool             `json:"stream,omitempty"`
}

// Body is the request as it is sent, extra's members set over it.
func (r ResponsesRequest) Body(extra map[string]json.RawMessage) ([]byte, error) {
	input, err := Array(r.Input)
	if err != nil {
		return nil, err
	}
	return Encode(r, map[string]json.RawMessage{"input": input}, extra)
}

// InputMessage is a message of the conversation sent, in the API's short
// form (role and text; its type, "message", left out as optional).
type InputMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// FunctionCallItem is a call the model made, sent back in the
// conversation.
type FunctionCallItem struct {
	Type      string `json:"type"` // "function_call"
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// FunctionCallOutput is a call's result.
type FunctionCallOutput struct {
	Type   string `json:"type"` // "function_call_output"
	CallID string `json:"call_id"`
	Output string `json:"output"`
}

// ResponsesTool offers a function.
type ResponsesTool struct {
	Type        string         `json:"type"` // "function"
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Parameters  map[string]any `json:"parameters"`
	Strict      bool           `json:"strict"`
}

// ReasoningConfig sets how hard a reasoning model thinks.
type ReasoningConfig struct {
	Effort string `json:"effort"`
}

// TextConfig asks for an answer that is JSON of a schema.
type TextConfig struct {
	Format TextFormat `json:"format"`
}

// TextFormat is a named JSON schema.
type TextFormat struct {
	Name   string         `json:"name"`
	Schema map[string]any `json:"schema"`
	Type   string         `json:"type"` // "json_schema"
}

// Response is the answer of the Responses API. Output items are kept as
// the bytes the server sent: a reasoning item goes back byte for byte.
type Response struct {
	Status            string            `json:"status"`
	Error             *ResponseError    `json:"error"`
	IncompleteDetails *IncompleteReason `json:"incomplete_details"`
	Output            []json.RawMessage `json:"output"`
	Usage             ResponsesUsage    `json:"usage"`
}

// ResponseError is why a response failed.
type ResponseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// IncompleteReason is why a response is incomplete.
type IncompleteReason struct {
	Reason string `json:"reason"`
}

// ResponsesUsage counts a response's tokens.
type ResponsesUsage struct {
	InputTokens        int64 `json:"input_tokens"`
	OutputTokens       int64 `json:"output_tokens"`
	TotalTokens        int64 `json:"total_tokens"`
	InputTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
}

// OutputItem is what harness reads of an output item: a message's text
// and refusals, a function call, a reasoning item's summary.
type OutputItem struct {
	Type      string `json:"type"`
	Status    string `json:"status"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	Content   []struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Refusal string `json:"refusal"`
	} `json:"content"`
	Summary []struct {
		Text string `json:"text"`
	} `json:"summary"`
}

// ItemType is an output item's type, or "" when the bytes are no object
// with a string type.
func ItemType(raw []byte) string {
	var it struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(raw, &it) != nil {
		return ""
	}
	return it.Type
}

// ResponsesEvent is what harness reads of an event of a streamed
// response: the item of response.output_item.done, the response of
// response.completed, .incomplete and .failed, and the code and message
// of error.
type ResponsesEvent struct {
	Type     string          `json:"type"`
	Item     json.RawMessage `json:"item"`
	Response *Response       `json:"response"`
	Code     string          `json:"code"`
	Message  string          `json:"message"`
}

// DecodeResponsesEvent decodes an event harness reads; any other type
// comes back with only its type, whatever else it holds.
func DecodeResponsesEvent(data []byte) (ResponsesEvent, error) {
	var ev ResponsesEvent
	switch t := ItemType(data); t {
	case "response.output_item.done", "response.completed", "response.incomplete", "response.failed", "error":
		err := json.Unmarshal(data, &ev)
		return ev, err
	default:
		ev.Type = t
		return ev, nil
	}
}
