package loop

import "github.com/harness-dev/harness/artifacts"

// Journal event records written by the loop.
type (
	ModelRequestEvent struct {
		Turn int `json:"turn"`
		// WireAPI is set for a request over the Responses API.
		WireAPI  string           `json:"wireApi,omitempty"`
		Model    string           `json:"model"`
		Key      artifacts.Digest `json:"key"`
		Messages int              `json:"messages"`
	}
	ModelResponseEvent struct {
		Turn      int        `json:"turn"`
		Content   string     `json:"content"`
		ToolCalls []ToolCall `json:"toolCalls"`
		// DroppedCalls counts the calls of the answer past those harness
		// keeps (callsKept), left out of ToolCalls and of the conversation.
		DroppedCalls int    `json:"droppedCalls,omitempty"`
		FinishReason string `json:"finishReason"`
		Reasoning    string `json:"reasoning,omitempty"`
		// ReasoningItems are the Responses API's opaque reasoning items,
		// digested; resume sends them back as they are.
		ReasoningItems []ReasoningItem `json:"reasoningItems,omitempty"`
		Refusal        string          `json:"refusal,omitempty"`
		Usage          Usage           `json:"usage"`
		// ReportedUsage is what the provider said, when Usage had to be
		// corrected (Usage.Corrected).
		ReportedUsage *Usage `json:"reportedUsage,omitempty"`
	}
	ToolStartedEvent struct {
		Turn      int    `json:"turn"`
		CallID    string `json:"callId"`
		Tool      string `json:"tool"`
		Arguments string `json:"arguments"`
	}
	ToolFinishedEvent struct {
		Turn   int    `json:"turn"`
		CallID string `json:"callId"`
		Tool   string `json:"tool"`
		Status string `json:"status"`
		Code   string `json:"code,omitempty"`
		Output string `json:"output"`
		// OutputDigest is of the output file's bytes, which resume checks
		// before it gives the content to the model again.
		OutputDigest artifacts.Digest `json:"outputDigest"`
		// OutputBytes, for an output of at most InlineOutputMax bytes, is
		// the output file itself. The line then makes the output durable,
		// and the file, written without an fsync, is synced when the loop
		// ends; resume rewrites it from here if a power cut lost it.
		OutputBytes string `json:"outputBytes,omitempty"`
	}
	// AnswerRejectedEvent: the final answer failed its check; Message is
	// what the model was told (resume adds it to the conversation again).
	AnswerRejectedEvent struct {
		Turn    int    `json:"turn"`
		Attempt int    `json:"attempt"`
		Error   string `json:"error"`
		Message string `json:"message"`
	}
	LimitReachedEvent struct {
		Limit string `json:"limit"` // turns | tokens | timeout
		Value string `json:"value"`
		Turns int    `json:"turns"`
		Usage Usage  `json:"usage"`
	}
)

// ToolOutput is tool-outputs/<call>-<tool>.json: the full result of a call.
type ToolOutput struct {
	artifacts.Envelope
	Turn      int    `json:"turn"`
	CallID    string `json:"callId"`
	Tool      string `json:"tool"`
	Arguments string `json:"arguments"`
	Status    string `json:"status"`
	Content   string `json:"content"`
	Record    any    `json:"record,omitempty"`
}
