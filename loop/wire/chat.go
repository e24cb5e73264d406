package wire

import (
	"cmp"
	"encoding/json"
	"strings"
)

// ChatPath is where Chat Completions are posted.
const ChatPath = "chat/completions"

// ChatRequest is the body of POST /chat/completions. Optional fields are
// sent only when set.
type ChatRequest struct {
	Model               string          `json:"model"`
	Messages            []ChatMessage   `json:"messages"`
	Tools               []ChatTool      `json:"tools,omitempty"`
	Temperature         *float64        `json:"temperature,omitempty"`
	TopP                *float64        `json:"top_p,omitempty"`
	Seed                *int64          `json:"seed,omitempty"`
	MaxCompletionTokens int64           `json:"max_completion_tokens,omitempty"`
	Stop                []string        `json:"stop,omitempty"`
	ReasoningEffort     string          `json:"reasoning_effort,omitempty"`
	ResponseFormat      *ResponseFormat `json:"response_format,omitempty"`
	Stream              bool            `json:"stream,omitempty"`
	StreamOptions       *StreamOptions  `json:"stream_options,omitempty"`
}

// ChatMessage is one message of the conversation sent. An assistant
// message that only calls tools has no content member.
type ChatMessage struct {
	Role       string         `json:"role"`
	Content    *string        `json:"content,omitempty"`
	ToolCalls  []ChatToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

// Text is s as a message's content.
func Text(s string) *string { return &s }

// ChatToolCall is a function call, sent back in the conversation or read
// from an answer.
type ChatToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
}

// FunctionCall names the function and carries its arguments as the JSON
// text the model wrote.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ChatTool offers a function.
type ChatTool struct {
	Type     string      `json:"type"` // "function"
	Function FunctionDef `json:"function"`
}

// FunctionDef describes a function the model may call.
type FunctionDef struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Parameters  map[string]any `json:"parameters,omitempty"`
}

// ResponseFormat asks for an answer that is JSON of a schema.
type ResponseFormat struct {
	JSONSchema JSONSchema `json:"json_schema"`
	Type       string     `json:"type"` // "json_schema"
}

// JSONSchema is a named schema.
type JSONSchema struct {
	Name   string         `json:"name"`
	Schema map[string]any `json:"schema"`
}

// StreamOptions asks a stream to end with the usage.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// ChatCompletion is the answer to a chat request.
type ChatCompletion struct {
	Choices []ChatChoice `json:"choices"`
	Usage   ChatUsage    `json:"usage"`
}

// ChatChoice is one of an answer's choices; harness reads index 0.
type ChatChoice struct {
	Index        int64         `json:"index"`
	Message      AnswerMessage `json:"message"`
	FinishReason string        `json:"finish_reason"`
}

// AnswerMessage is the assistant's message in a choice. Some servers
// (vLLM, DeepSeek) put the model's reasoning beside its answer.
type AnswerMessage struct {
	Content          string         `json:"content"`
	Refusal          string         `json:"refusal"`
	ReasoningContent string         `json:"reasoning_content"`
	ToolCalls        []ChatToolCall `json:"tool_calls"`
}

// ChatUsage counts a chat answer's tokens.
type ChatUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	TotalTokens         int64 `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

// ChatChunk is one event of a streamed chat answer.
type ChatChunk struct {
	Choices []ChunkChoice `json:"choices"`
	Usage   *ChatUsage    `json:"usage"`
}

// ChunkChoice is a choice's part of a chunk.
type ChunkChoice struct {
	Index        int64     `json:"index"`
	Delta        ChatDelta `json:"delta"`
	FinishReason string    `json:"finish_reason"`
}

// ChatDelta is what a chunk adds to a choice's message.
type ChatDelta struct {
	Content          string          `json:"content"`
	Refusal          string          `json:"refusal"`
	ReasoningContent string          `json:"reasoning_content"`
	ToolCalls        []ToolCallDelta `json:"tool_calls"`
}

// ToolCallDelta is a chunk's part of one tool call: the first part of a
// call carries its id and name, later parts more of its arguments.
type ToolCallDelta struct {
	// Index says which call of the message the part belongs to. Some
	// servers leave it out and send each call whole.
	Index    *int64       `json:"index"`
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
}

// ChatAccumulator builds choice 0 of a streamed answer from its chunks:
// the answer a request without streaming would have got.
type ChatAccumulator struct {
	content, refusal, reasoning strings.Builder
	calls                       []*accCall
	byIndex                     map[int64]*accCall
	// FinishReason is why choice 0 ended: the first finish_reason it gave,
	// unless another says it was cut (length, content_filter), which wins
	// whenever it came, since a cut call must not run. "" means the stream
	// has not said why it stopped.
	FinishReason string
	Usage        ChatUsage
}

type accCall struct {
	id, typ, name string
	args          strings.Builder
}

// Add takes one chunk. Choices other than 0 are ignored: they say
// nothing of choice 0.
func (a *ChatAccumulator) Add(c ChatChunk) {
	if c.Usage != nil {
		a.Usage = *c.Usage
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue
		}
		if a.FinishReason == "" || ch.FinishReason == "length" || ch.FinishReason == "content_filter" && a.FinishReason != "length" {
			a.FinishReason = cmp.Or(ch.FinishReason, a.FinishReason)
		}
		a.content.WriteString(ch.Delta.Content)
		a.refusal.WriteString(ch.Delta.Refusal)
		a.reasoning.WriteString(ch.Delta.ReasoningContent)
		for _, d := range ch.Delta.ToolCalls {
			a.addCall(d)
		}
	}
}

func (a *ChatAccumulator) addCall(d ToolCallDelta) {
	var call *accCall
	switch {
	case d.Index != nil:
		// -1 is what some servers send for a message's only call.
		i := max(*d.Index, 0)
		if a.byIndex == nil {
			a.byIndex = map[int64]*accCall{}
		}
		call = a.byIndex[i]
		// Some servers give every call index 0 and send each whole: a
		// part with an id other than the call's is another call.
		if call == nil || d.ID != "" && call.id != "" && d.ID != call.id {
			call = &accCall{}
			a.byIndex[i] = call
			a.calls = append(a.calls, call)
		}
	case len(a.calls) > 0 && !startsCall(a.calls[len(a.calls)-1], d):
		call = a.calls[len(a.calls)-1]
	default:
		call = &accCall{}
		a.calls = append(a.calls, call)
	}
	if call.id == "" {
		call.id = d.ID
	}
	if call.typ == "" {
		call.typ = d.Type
	}
	// The name comes whole in a call's first part; a server that repeats
	// it in later parts must not double it.
	if call.name == "" {
		call.name = d.Function.Name
	}
	call.args.WriteString(d.Function.Arguments)
}

// startsCall says whether a part without an index begins a call after
// last: it names a function (a call's first part does, and only it), or
// carries an id other than last's.
func startsCall(last *accCall, d ToolCallDelta) bool {
	return d.Function.Name != "" && last.name != "" || d.ID != "" && last.id != "" && d.ID != last.id
}

// Message is choice 0's message as accumulated.
func (a *ChatAccumulator) Message() AnswerMessage {
	m := AnswerMessage{Content: a.content.String(), Refusal: a.refusal.String(), ReasoningContent: a.reasoning.String()}
	for _, c := range a.calls {
		m.ToolCalls = append(m.ToolCalls, ChatToolCall{ID: c.id, Type: c.typ, Function: FunctionCall{Name: c.name, Arguments: c.args.String()}})
	}
	return m
}

// DecodeChunk decodes one event of a chat stream.
func DecodeChunk(data []byte) (ChatChunk, error) {
	var c ChatChunk
	err := json.Unmarshal(data, &c)
	return c, err
}
