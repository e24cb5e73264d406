package loop

import (
	"context"
	"encoding/json"
)

// Role is the speaker of a message in the chat protocol.
type Role string

const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one entry of the conversation. Only the fields of its role are
// set: ToolCalls on assistant messages, ToolCallID on tool results.
type Message struct {
	Role       Role       `json:"role"`
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"toolCalls,omitempty"`
	ToolCallID string     `json:"toolCallId,omitempty"`
	// Reasoning, on an assistant message over the Responses API, are the
	// reasoning items that came before it, sent back as they came.
	Reasoning []ReasoningItem `json:"reasoning,omitempty"`
}

// ToolCall is the model's request to run a tool. Arguments is the raw JSON
// text exactly as the model produced it; it may be malformed.
type ToolCall struct {
	// ID is what harness, its records and the people deciding about the
	// call know it by: the model's id when that is a plain one (see
	// stableCallIDs), else one harness minted from the turn and position.
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	// ModelID is the id the model gave a call whose id harness replaced
	// because it was not plain: kept for the record, and sent back to
	// the model in place of ID, since the wire protocol matches a result
	// to the call by the model's own id.
	ModelID string `json:"modelId,omitempty"`
}

// WireID is the id the model knows the call by.
func (c ToolCall) WireID() string {
	if c.ModelID != "" {
		return c.ModelID
	}
	return c.ID
}

// ToolSpec is what the model is told about a tool.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Params are the generation parameters. They are part of the run identity
// and of a cassette key; nil and zero mean "provider default" and are not sent.
type Params struct {
	Temperature         *float64 `json:"temperature,omitempty"`
	TopP                *float64 `json:"topP,omitempty"`
	Seed                *int64   `json:"seed,omitempty"`
	MaxCompletionTokens int64    `json:"maxCompletionTokens,omitempty"`
	Stop                []string `json:"stop,omitempty"`
	ReasoningEffort     string   `json:"reasoningEffort,omitempty"`
	// ExtraBody is merged into every request body, for server-specific
	// knobs (vLLM's top_k, a gateway's routing hints).
	ExtraBody json.RawMessage `json:"extraBody,omitempty"`
	// ResponseSchema, when set, asks for structured output matching this
	// JSON Schema (response_format json_schema).
	ResponseSchema json.RawMessage `json:"responseSchema,omitempty"`
}

// Request is one call to the model. Its canonical JSON encoding (this
// struct's field order, tool parameters re-encoded with sorted keys) is what
// a cassette key digests.
type Request struct {
	// WireAPI is the protocol the request goes over: "" is Chat
	// Completions (so keys recorded before there was a choice stay
	// valid), WireResponses the Responses API.
	WireAPI  string     `json:"wireApi,omitempty"`
	Model    string     `json:"model"`
	Messages []Message  `json:"messages"`
	Tools    []ToolSpec `json:"tools,omitempty"`
	Params   Params     `json:"params"`
}

// Usage counts tokens as the provider reported them.
type Usage struct {
	PromptTokens     int64 `json:"promptTokens"`
	CompletionTokens int64 `json:"completionTokens"`
	CachedTokens     int64 `json:"cachedTokens"`
	ReasoningTokens  int64 `json:"reasoningTokens,omitempty"`
	TotalTokens      int64 `json:"totalTokens"`
	// Estimated marks counts harness estimated (characters / 4) because
	// the provider reported none: --max-tokens must not count zero.
	Estimated bool `json:"estimated,omitempty"`
	// Corrected marks counts harness changed because the provider's could
	// not be true: negative, beyond any request, more cached tokens than
	// prompt tokens, or a total below its parts (the reported ones are in the turn's model.response event).
	Corrected bool `json:"corrected,omitempty"`
	// Model is the model that spent these tokens ("" in a sum over
	// several).
	Model string `json:"model,omitempty"`
}

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		PromptTokens:     u.PromptTokens + v.PromptTokens,
		CompletionTokens: u.CompletionTokens + v.CompletionTokens,
		CachedTokens:     u.CachedTokens + v.CachedTokens,
		ReasoningTokens:  u.ReasoningTokens + v.ReasoningTokens,
		TotalTokens:      u.TotalTokens + v.TotalTokens,
		Estimated:        u.Estimated || v.Estimated,
		Corrected:        u.Corrected || v.Corrected,
		Model:            sameModel(u, v),
	}
}

// sameModel is the model of a sum: the one both parts name, else none.
func sameModel(u, v Usage) string {
	if u.Model == v.Model {
		return u.Model
	}
	return ""
}

// Response is the model's answer to one Request.
type Response struct {
	Message Message `json:"message"`
	// Reasoning is reasoning text a server returned beside the answer
	// (over the Responses API, the reasoning items' summaries).
	Reasoning string `json:"reasoning,omitempty"`
	// Refusal is the model's refusal to answer, when it gave one.
	Refusal      string `json:"refusal,omitempty"`
	FinishReason string `json:"finishReason"`
	Usage        Usage  `json:"usage"`
}

// Model produces the next assistant message. Implementations: the
// OpenAI-compatible HTTP provider and the cassette player.
type Model interface {
	Complete(ctx context.Context, req Request) (Response, error)
}

// Effect classifies what a tool can do to the world; policy decides on it.
type Effect string

const (
	EffectRead       Effect = "read"
	EffectWrite      Effect = "write"
	EffectSideEffect Effect = "side-effect"
)

// Tool is a capability offered to the model. Call receives arguments that
// already parsed as JSON and validated against Spec().Parameters.
type Tool interface {
	Spec() ToolSpec
	Effect() Effect
	Call(ctx context.Context, call ToolCall, args json.RawMessage) (ToolResult, error)
}

// ToolResult is what a tool returns. Content is what the model sees. Status
// is "ok" or "error" (a refusal or failure the model may recover from); an
// error returned from Call instead is an infrastructure failure that ends
// the run. Record is the tool's full, typed output, stored under
// tool-outputs/ and never shown to the model.
type ToolResult struct {
	Content string `json:"content"`
	Status  string `json:"status"`
	Record  any    `json:"record,omitempty"`
	// Usage is model usage the tool caused (a subagent's), which counts
	// against the run's token limit.
	Usage Usage `json:"-"`
}

const (
	StatusOK    = "ok"
	StatusError = "error"
)

type usageKey struct{}

// WithUsage is ctx carrying the run's token usage so far; the loop hands
// it to every tool call.
func WithUsage(ctx context.Context, u Usage) context.Context {
	return context.WithValue(ctx, usageKey{}, u)
}

// UsageSoFar is the run's token usage when the tool was called, for a tool
// that spends from the same budget (a subagent).
func UsageSoFar(ctx context.Context) Usage {
	u, _ := ctx.Value(usageKey{}).(Usage)
	return u
}

type turnKey struct{}

// WithTurn is ctx carrying the turn a tool call belongs to.
func WithTurn(ctx context.Context, turn int) context.Context {
	return context.WithValue(ctx, turnKey{}, turn)
}

// TurnOf is the turn of the tool call ctx was given for (0 outside one),
// for tools that record who did what when.
func TurnOf(ctx context.Context) int {
	t, _ := ctx.Value(turnKey{}).(int)
	return t
}

// ErrorResult is the model-visible form of a refusal or tool failure: a
// stable machine code and a sentence that says what to do instead.
func ErrorResult(code, msg string, record any) ToolResult {
	b, _ := json.Marshal(struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{Error: struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}{code, msg}})
	return ToolResult{Content: string(b), Status: StatusError, Record: record}
}
