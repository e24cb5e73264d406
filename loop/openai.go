package loop

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/loop/wire"
)

// DefaultBaseURL is used when OpenAIConfig.BaseURL is empty.
const DefaultBaseURL = "https://api.openai.com/v1"

// OpenAIConfig configures the OpenAI-compatible Chat Completions model.
// Only what is set here reaches the wire: the model never reads OPENAI_*
// environment variables, so a stray OPENAI_ORG_ID on a CI runner cannot
// change whom a run bills.
type OpenAIConfig struct {
	BaseURL          string // "" = DefaultBaseURL
	APIKey           string
	OrgID, ProjectID string // sent only when set
	Retry            RetryPolicy
	HTTPClient       *http.Client // nil = http.DefaultClient
	// OnAttempt is told about every failed attempt, retried or final.
	OnAttempt func(Attempt)
	// Stream asks for streamed responses (and their usage), which survive
	// proxies that cut connections idle for as long as a long answer
	// takes; the journal is the same either way.
	Stream bool
	// maxBody bounds a response body (0: maxResponseBody); tests lower it.
	maxBody int64
}

// OpenAI is a Model backed by an OpenAI-compatible /chat/completions API.
type OpenAI struct {
	base string
	// shown is base as messages name it: without credentials or query
	// string, where gateways carry keys.
	shown  string
	stream bool
	// client is nil when base is no URL; every request then fails with
	// badBase.
	client  *wire.Client
	badBase error
	retry   RetryPolicy
	on      func(Attempt)
}

// NewOpenAI builds the model from explicit options only.
func NewOpenAI(cfg OpenAIConfig) *OpenAI {
	base := cfg.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	baseRT := http.DefaultTransport
	if cfg.HTTPClient != nil && cfg.HTTPClient.Transport != nil {
		baseRT = cfg.HTTPClient.Transport
	}
	hc := &http.Client{Transport: &transport{base: baseRT, maxBody: cfg.maxBody}, CheckRedirect: wire.ErrRedirect}
	m := &OpenAI{
		base:   base,
		shown:  cmp.Or(artifacts.EndpointOf(base), "the endpoint given by --base-url"),
		stream: cfg.Stream,
		retry:  cfg.Retry.withDefaults(),
		on:     cfg.OnAttempt,
	}
	u, err := url.Parse(base)
	if err != nil {
		// Not err: its text quotes the URL, credentials and all.
		m.badBase = errors.New("the base URL is not a URL: check --base-url")
		_ = err
		return m
	}
	m.client = &wire.Client{Base: u, Key: cfg.APIKey, Org: cfg.OrgID, Project: cfg.ProjectID, HTTP: hc}
	return m
}

// Complete sends one request over its wire API, retrying transient
// failures.
func (m *OpenAI) Complete(ctx context.Context, req Request) (Response, error) {
	extra, err := extraBody(req.Params.ExtraBody, req.WireAPI)
	if err != nil {
		return Response{}, err
	}
	if m.badBase != nil {
		return Response{}, &ProviderError{Message: m.badBase.Error(), Model: req.Model, Endpoint: m.shown}
	}
	switch req.WireAPI {
	case "", WireChat:
	case WireResponses:
		return m.respond(ctx, req, extra)
	default:
		return Response{}, fmt.Errorf("wire API %q is not one of %s", req.WireAPI, strings.Join(WireAPIs, ", "))
	}
	params, err := toParams(req)
	if err != nil {
		return Response{}, err
	}
	params.Stream = m.stream
	if m.stream {
		params.StreamOptions = &wire.StreamOptions{IncludeUsage: true}
	}
	body, err := wire.Encode(params, nil, extra)
	if err != nil {
		return Response{}, err
	}
	return exchange(ctx, m, req.Model, wire.ChatPath, body, m.streamed, fromCompletion)
}

// exchange sends body to path, or as a stream through streamed, retrying
// transient failures, and makes the answer a Response with convert: one
// attempt's way for either wire API.
func exchange[T any](ctx context.Context, m *OpenAI, model, path string, body []byte,
	streamed func(context.Context, []byte) (*T, error), convert func(*T) (Response, error)) (Response, error) {
	var resp Response
	err := m.retry.do(ctx, m.on, model, m.shown, func(ctx context.Context) error {
		var answer *T
		var err error
		if m.stream {
			answer, err = streamed(ctx, body)
		} else {
			answer = new(T)
			err = m.client.Post(ctx, path, body, answer)
		}
		if err != nil {
			return err
		}
		resp, err = convert(answer)
		return err
	})
	return resp, err
}

// streamed sends the request as a stream and accumulates the chunks into
// the completion a plain request would have returned. Only choice 0 is
// the answer: another choice's finish_reason says nothing of whether
// choice 0 ended.
func (m *OpenAI) streamed(ctx context.Context, body []byte) (*wire.ChatCompletion, error) {
	var acc wire.ChatAccumulator
	err := m.client.Stream(ctx, wire.ChatPath, body, func(ev wire.Event) error {
		chunk, err := wire.DecodeChunk(ev.Data)
		if err != nil {
			return &wire.DecodeError{Path: wire.ChatPath, Err: err, Body: wire.Shorten(string(ev.Data))}
		}
		acc.Add(chunk)
		return nil
	})
	var ns *wire.NotStreamError
	if errors.As(err, &ns) && ns.MediaType == "application/json" {
		// A server that does not stream answers with the whole body.
		var c wire.ChatCompletion
		if json.Unmarshal(ns.Body, &c) == nil {
			return &c, nil
		}
	}
	if err != nil {
		return nil, err
	}
	// A stream that stops before the model said why it stopped was cut
	// (a dropped connection, a proxy's timeout): what came is not an
	// answer, and a tool call in it may be missing arguments or be one of
	// several. Asked again, like a failed request.
	if acc.FinishReason == "" {
		return nil, &transientError{errors.New("the chat stream ended before a finish_reason for choice 0")}
	}
	return &wire.ChatCompletion{
		Choices: []wire.ChatChoice{{Index: 0, Message: acc.Message(), FinishReason: acc.FinishReason}},
		Usage:   acc.Usage,
	}, nil
}

// ExtraBodyKeyPlain says whether an extra body key is a plain top-level
// field name. Each key is set as a member of the body's top level, but
// proxies and servers that read keys as paths (sjson, jq: ".", "#", "*",
// "|", "@", "\\") would take "messages.0.content" into the conversation
// or "mo\\del" for an owned field. Letters, digits, "_" and "-" mean the
// same to every reader, so ExtraBodyOwned judges what the server sees.
func ExtraBodyKeyPlain(k string) bool {
	if k == "" {
		return false
	}
	for _, c := range k {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// OwnedBody are the request body keys harness sends itself, by wire API,
// or that would undo what it sends. The extra body is set over the body
// harness built, so one of these would replace the conversation the
// journal records, the tools the policy allows (web search is a tool),
// the model the identity names, the answer's schema (--output-schema), or
// let the provider store, cut or extend the conversation.
var OwnedBody = map[string][]string{
	WireChat: {"model", "messages", "tools", "tool_choice", "functions", "function_call", "stream", "stream_options",
		"response_format", "store", "web_search_options"},
	WireResponses: {"model", "input", "instructions", "tools", "tool_choice", "stream", "stream_options",
		"store", "include", "previous_response_id", "conversation", "prompt", "background", "text", "truncation"},
}

// ExtraBodyOwned says whether key is one harness sends over wire. Letter
// case is ignored: servers that decode with Go's encoding/json (and some
// others) match field names without case.
func ExtraBodyOwned(wire, key string) bool {
	if wire == "" {
		wire = WireChat
	}
	return slices.ContainsFunc(OwnedBody[wire], func(o string) bool { return strings.EqualFold(o, key) })
}

// extraBody checks --extra-body's object key by key. The options were
// checked when the run was made; the keys are checked again here because
// the wire API can change on resume and a path key must never be sent.
func extraBody(raw json.RawMessage, wire string) (map[string]json.RawMessage, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, fmt.Errorf("extra body: %w", err)
	}
	keys := slices.Sorted(maps.Keys(fields))
	for _, k := range keys {
		switch {
		case !ExtraBodyKeyPlain(k):
			return nil, fmt.Errorf("extra body key %q is not a plain field name (letters, digits, _ and -)", k)
		case ExtraBodyOwned(wire, k):
			return nil, fmt.Errorf("extra body sets %q, which harness sends itself over the %s wire API", k, cmp.Or(wire, WireChat))
		case !utf8.Valid(fields[k]):
			// JSON between systems is UTF-8; servers that decode the
			// body as text first would refuse the whole request.
			return nil, fmt.Errorf("extra body value of %q is not UTF-8 text", k)
		}
	}
	return fields, nil
}

func toParams(req Request) (wire.ChatRequest, error) {
	p := wire.ChatRequest{Model: req.Model}
	ids := wireIDs(req.Messages)
	for _, m := range req.Messages {
		switch m.Role {
		case RoleSystem, RoleUser:
			p.Messages = append(p.Messages, wire.ChatMessage{Role: string(m.Role), Content: wire.Text(m.Content)})
		case RoleTool:
			p.Messages = append(p.Messages, wire.ChatMessage{Role: string(m.Role), Content: wire.Text(m.Content), ToolCallID: resultWireID(ids, m.ToolCallID)})
		case RoleAssistant:
			a := wire.ChatMessage{Role: string(m.Role)}
			if m.Content != "" {
				a.Content = wire.Text(m.Content)
			}
			for _, c := range m.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, wire.ChatToolCall{ID: c.WireID(), Type: "function", Function: wire.FunctionCall{Name: c.Name, Arguments: c.Arguments}})
			}
			p.Messages = append(p.Messages, a)
		default:
			return p, fmt.Errorf("message role %q is not supported", m.Role)
		}
	}
	for _, t := range req.Tools {
		params, err := toolParameters(t)
		if err != nil {
			return p, err
		}
		p.Tools = append(p.Tools, wire.ChatTool{Type: "function", Function: wire.FunctionDef{Name: t.Name, Description: t.Description, Parameters: params}})
	}
	p.Temperature, p.TopP, p.Seed = req.Params.Temperature, req.Params.TopP, req.Params.Seed
	p.MaxCompletionTokens = max(req.Params.MaxCompletionTokens, 0)
	p.Stop = req.Params.Stop
	p.ReasoningEffort = req.Params.ReasoningEffort
	if len(req.Params.ResponseSchema) > 0 {
		schema, err := responseSchema(req)
		if err != nil {
			return p, err
		}
		p.ResponseFormat = &wire.ResponseFormat{Type: "json_schema", JSONSchema: wire.JSONSchema{Name: "answer", Schema: schema}}
	}
	return p, nil
}

// toolParameters is a tool's parameter schema as an object.
func toolParameters(t ToolSpec) (map[string]any, error) {
	var params map[string]any
	if len(t.Parameters) > 0 {
		if err := json.Unmarshal(t.Parameters, &params); err != nil {
			return nil, fmt.Errorf("tool %s: parameters: %w", t.Name, err)
		}
	}
	return params, nil
}

// responseSchema is --output-schema's schema as an object.
func responseSchema(req Request) (map[string]any, error) {
	var schema map[string]any
	if err := json.Unmarshal(req.Params.ResponseSchema, &schema); err != nil {
		return nil, fmt.Errorf("response schema: %w", err)
	}
	return schema, nil
}

func fromCompletion(c *wire.ChatCompletion) (Response, error) {
	if len(c.Choices) == 0 {
		return Response{}, &ProviderError{Message: "the provider answered with no choices", Answered: true}
	}
	// Choice 0 is the answer wherever the server put it in the array.
	var ch *wire.ChatChoice
	for i := range c.Choices {
		if c.Choices[i].Index == 0 {
			ch = &c.Choices[i]
			break
		}
	}
	if ch == nil {
		return Response{}, &ProviderError{Message: "the provider answered with no choice of index 0", Answered: true}
	}
	msg := Message{Role: RoleAssistant, Content: ch.Message.Content}
	for _, tc := range ch.Message.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue
		}
		msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	return Response{
		Message: msg,
		// Journaled, never sent back.
		Reasoning:    ch.Message.ReasoningContent,
		Refusal:      ch.Message.Refusal,
		FinishReason: ch.FinishReason,
		Usage: Usage{
			PromptTokens:     c.Usage.PromptTokens,
			CompletionTokens: c.Usage.CompletionTokens,
			CachedTokens:     c.Usage.PromptTokensDetails.CachedTokens,
			ReasoningTokens:  c.Usage.CompletionTokensDetails.ReasoningTokens,
			TotalTokens:      c.Usage.TotalTokens,
		},
	}, nil
}

// codeResponseTooLarge is ProviderError.Code for a response body over
// the bound (see ResponseTooLargeError).
const codeResponseTooLarge = "response_too_large"

// ProviderError is a failure of the model provider, after retries.
type ProviderError struct {
	Status    int    // HTTP status, 0 for a transport failure
	Code      string // the provider's error code, if any
	Message   string
	Retryable bool // the failure was transient (the retry budget ran out)
	// Answered is a provider that answered, with something that is no
	// answer (a failure it reported, a body that is not the API's).
	Answered bool
	// Rejected is a failure the provider reported that another attempt
	// would meet again (the request itself is refused), whatever the HTTP
	// status it came with.
	Rejected bool
	Attempts int
	// Model and Endpoint are what was asked, for the message.
	Model, Endpoint string
}

func (e *ProviderError) Error() string {
	var s string
	switch {
	case e.Status != 0:
		s = fmt.Sprintf("model provider answered HTTP %d", e.Status)
	case e.Code == codeResponseTooLarge:
		s = "model provider sent too much"
	case e.Rejected:
		s = "model provider rejected the request"
	case e.Answered:
		s = "model provider answered with no usable answer"
	default:
		s = "model provider unreachable"
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Attempts > 1 {
		s += fmt.Sprintf(" (after %d attempts)", e.Attempts)
	}
	switch e.Status {
	case http.StatusUnauthorized, http.StatusForbidden:
		s += "; check the API key in HARNESS_API_KEY (or OPENAI_API_KEY) and --base-url"
	case http.StatusNotFound:
		s += fmt.Sprintf("; the endpoint %s does not serve model %q: check --model, and --base-url (it usually ends in /v1)", e.Endpoint, e.Model)
	}
	return s
}

// providerError converts a wire or transport error into a ProviderError.
func providerError(err error, attempts int, retryable bool) *ProviderError {
	var pe *ProviderError
	if errors.As(err, &pe) {
		cp := *pe
		cp.Attempts, cp.Retryable = attempts, retryable
		return &cp
	}
	var tooLarge *ResponseTooLargeError
	if errors.As(err, &tooLarge) {
		return &ProviderError{Code: codeResponseTooLarge, Message: tooLarge.Error(), Attempts: attempts, Retryable: retryable}
	}
	var api *wire.APIError
	if errors.As(err, &api) {
		return &ProviderError{Status: api.StatusCode, Code: api.Code, Message: api.Message, Attempts: attempts, Retryable: retryable}
	}
	var re *wire.ReportedError
	if errors.As(err, &re) {
		return &ProviderError{Code: re.Code, Message: re.Message, Attempts: attempts, Retryable: retryable, Answered: true, Rejected: !transientCode(re.Code)}
	}
	var de *wire.DecodeError
	var ns *wire.NotStreamError
	var te *transientError
	if errors.As(err, &de) || errors.As(err, &ns) || errors.As(err, &te) {
		return &ProviderError{Message: err.Error(), Attempts: attempts, Retryable: retryable, Answered: true}
	}
	return &ProviderError{Message: err.Error(), Attempts: attempts, Retryable: retryable}
}
