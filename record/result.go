package record

import "encoding/json"

// Result is result.json, and the result field of run.finished: how the run
// ended, in the terms a CI job acts on. It is written whenever a run ends,
// whatever the reason.
type Result struct {
	Type    string `json:"type"` // harness.result
	Version int    `json:"version"`
	RunID   string `json:"runId"`
	RunDir  string `json:"runDir"` // absolute
	// Status is one word: succeeded, failed, limit, provider_error,
	// refused, interrupted or awaiting_approval.
	Status string `json:"status"`
	// Reason is the specific cause: completed, max_turns, max_tokens,
	// timeout, truncated, content_filter, empty_answer, schema_invalid,
	// policy_denial, drift, or the refusal's code.
	Reason   string `json:"reason"`
	ExitCode int    `json:"exitCode"`
	IsError  bool   `json:"isError"`
	// Message says what happened and what to do, when it did not succeed.
	Message string `json:"message,omitempty"`
	// Answer is the model's final text (kept when it was cut or invalid).
	Answer string `json:"answer"`
	// StructuredOutput is the answer parsed, when --output-schema was given
	// and the answer matched it.
	StructuredOutput json.RawMessage `json:"structuredOutput,omitempty"`
	// SchemaErrors are why the last answer did not match --output-schema.
	SchemaErrors []string `json:"schemaErrors,omitempty"`
	// Model is the model the run asked; FallbackUsed says --fallback-model
	// answered after the model failed.
	Model        string `json:"model"`
	WireAPI      string `json:"wireApi,omitempty"`
	FallbackUsed bool   `json:"fallbackUsed,omitempty"`
	// FinishReason is the model's own, as given, for its last response.
	FinishReason string      `json:"finishReason,omitempty"`
	Turns        int         `json:"turns"`
	DurationMs   int64       `json:"durationMs"`
	Usage        ResultUsage `json:"usage"`
	// The usage of each model the run asked (a child run's under the
	// model it ran on), and what it cost.
	ModelCosts
	ToolCalls map[string]int `json:"toolCalls"`
	Denials   []Denial       `json:"denials"`
	Resumable bool           `json:"resumable"`
	// PendingApprovals are the calls waiting for a person when the status
	// is awaiting_approval: resume with --approve CALL_ID or --deny CALL_ID.
	PendingApprovals []PendingApproval `json:"pendingApprovals,omitempty"`
	// ResumeCommand continues the run, when it is resumable.
	ResumeCommand string `json:"resumeCommand,omitempty"`
	// ResumeEstimate says what the limit ResumeCommand raises rests on:
	// the run's own pace, an estimate (after --max-turns or --max-tokens).
	ResumeEstimate string `json:"resumeEstimate,omitempty"`
}

// ResultUsage is token usage over the whole run.
type ResultUsage struct {
	PromptTokens     int64 `json:"promptTokens"`
	CompletionTokens int64 `json:"completionTokens"`
	CachedTokens     int64 `json:"cachedTokens"`
	ReasoningTokens  int64 `json:"reasoningTokens"`
	TotalTokens      int64 `json:"totalTokens"`
	// UsageSource is provider, missing when a response carried none, or
	// none when no model was asked.
	UsageSource string `json:"usageSource"`
	// Corrected says that harness changed some provider count that could
	// not be true (negative, beyond any request, more cached tokens than
	// prompt tokens); the journal's model.response events hold the
	// provider's own as reportedUsage.
	Corrected bool `json:"corrected,omitempty"`
}

// Denial is one call the policy denied.
type Denial struct {
	Tool   string `json:"tool"`
	Reason string `json:"reason"`
	CallID string `json:"callId"`
}

// FileResult and TypeResult name result.json.
const (
	FileResult = "result.json"
	TypeResult = "harness.result"
)
