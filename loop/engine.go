package loop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/harness-dev/harness/artifacts"
)

// Reason says why a run of the loop ended.
type Reason string

const (
	ReasonCompleted     Reason = "completed"
	ReasonLimitTurns    Reason = "limit.turns"
	ReasonLimitTokens   Reason = "limit.tokens"
	ReasonLimitTimeout  Reason = "limit.timeout"
	ReasonInterrupted   Reason = "interrupted"
	ReasonProviderError Reason = "provider_error" // including a cassette mismatch on replay
	ReasonFailed        Reason = "failed"         // the model ended in error, or a tool failed inside harness
	ReasonPolicyDenied  Reason = "policy_denied"  // a denial ended the run, as the operator asked
	// The model stopped, but not with an answer a job can use.
	ReasonTruncated     Reason = "truncated"      // finish_reason length: cut at the token cap
	ReasonContentFilter Reason = "content_filter" // finish_reason content_filter
	ReasonEmptyAnswer   Reason = "empty_answer"   // no text and no tool call
	ReasonRefused       Reason = "refused"        // the model refused to answer
	ReasonAnswerInvalid Reason = "schema_invalid" // the answer failed its check after every retry
)

// AnswerCheck judges a final answer (for example against a JSON Schema).
// An error is told to the model, which may answer again.
type AnswerCheck interface {
	Check(answer string) error
}

// Gate is the policy around tool calls: Before decides a call that passed
// argument validation (a non-nil result replaces the call; end stops the
// run after recording it), After sees every result before the model does.
type Gate interface {
	Before(ctx context.Context, turn int, call ToolCall, effect Effect) (denied *ToolResult, end bool)
	After(call ToolCall, effect Effect, res ToolResult) ToolResult
}

// Limits bound a run. Zero means unlimited.
type Limits struct {
	MaxTurns  int
	Timeout   time.Duration
	MaxTokens int64
	// MaxToolCallsPerTurn bounds the calls of one answer that run; the
	// rest are answered with tool_calls_per_turn (0: no bound).
	MaxToolCallsPerTurn int
}

// Config is what one run of the loop needs.
type Config struct {
	Model     Model
	ModelName string
	// WireAPI is the protocol requests go over ("" or WireChat: Chat
	// Completions; WireResponses).
	WireAPI string
	Params  Params
	Tools   []Tool
	// MoreTools, when set, is asked before every model request for tools
	// that became available during the run (a server started by a later
	// activation); tools with names already offered are ignored. An error
	// (a server the operator allowed could not start) ends the run.
	MoreTools func(context.Context) ([]Tool, error)
	Limits    Limits
	// Journal receives the events of every turn.
	Journal *artifacts.Journal
	// ToolOutputDir receives one file per tool call; created if missing.
	ToolOutputDir string
	// Start carries what earlier segments of a resumed run used, so that
	// limits count the whole run. Zero for a new run.
	Start Progress
	// Gate, when set, decides every tool call (contextual flow control).
	Gate Gate
	// Approver, when set, decides which calls wait for a person.
	Approver Approver
	// Redact is applied to every tool output written (nil: none).
	Redact *artifacts.Redactor
	// AllowEmptyAnswer accepts a final answer with no text.
	AllowEmptyAnswer bool
	// Answer, when set, checks the final answer; a rejected answer is
	// sent back to the model with the reason, at most AnswerRetries times.
	Answer        AnswerCheck
	AnswerRetries int
}

// Progress is what a run has used so far.
type Progress struct {
	Turns     int
	Usage     Usage
	TurnUsage []Usage
	// Rejections are answers the check already refused.
	Rejections int
}

// Outcome is how a run of the loop ended.
type Outcome struct {
	Reason    Reason
	Final     Message // the last assistant message, when completed
	Turns     int
	Usage     Usage
	TurnUsage []Usage
	// ToolUsage is what tools spent on models of their own (a child run),
	// each under its model, in this segment.
	ToolUsage []Usage
	Messages  []Message // the whole conversation at the end
	// FinishReason is the model's own, from its last response.
	FinishReason string
	// Rejections counts answers the check refused (this segment).
	Rejections int
	// Pending are the calls awaiting a person (ReasonAwaitingApproval).
	Pending []ToolCall
	Err     error
}

type engine struct {
	cfg      Config
	tools    map[string]Tool
	schemas  map[string]*schema
	names    []string
	specs    []ToolSpec
	outNames map[string]bool
	// unsynced are tool outputs written without an fsync (their journal
	// lines carry them); Run syncs them before it returns.
	unsynced []string
	out      Outcome
	keys     KeyCache
}

// Run drives the model until it answers without tool calls, a limit is
// reached, ctx is cancelled (an interrupt), or something fails. It always
// returns an Outcome; the journal is complete for whatever happened.
func Run(ctx context.Context, cfg Config, history []Message) Outcome {
	e := &engine{cfg: cfg, tools: map[string]Tool{}, schemas: map[string]*schema{}, outNames: map[string]bool{}}
	e.out.Messages = slices.Clone(history)
	e.out.Turns, e.out.Usage = cfg.Start.Turns, cfg.Start.Usage
	e.out.TurnUsage = append([]Usage{}, cfg.Start.TurnUsage...)
	e.out.Rejections = cfg.Start.Rejections
	if err := e.addTools(cfg.Tools); err != nil {
		return e.fail(err)
	}
	if cfg.MoreTools != nil {
		more, err := cfg.MoreTools(ctx)
		if err == nil {
			err = e.addTools(more)
		}
		if err != nil {
			return e.fail(err)
		}
	}
	if cfg.ToolOutputDir != "" {
		if err := os.MkdirAll(cfg.ToolOutputDir, 0o755); err != nil {
			return e.fail(fmt.Errorf("tool outputs: %w", err))
		}
	}
	runCtx, cancel := ctx, context.CancelFunc(func() {})
	if cfg.Limits.Timeout > 0 {
		runCtx, cancel = context.WithTimeout(ctx, cfg.Limits.Timeout)
	}
	defer cancel()
	out := e.loop(ctx, runCtx)
	// Whatever ended the loop, the run's files are complete on disk before
	// the caller records the end: resume relies on an ended segment's
	// outputs being there, not only in the journal.
	if err := artifacts.SyncFiles(e.unsynced); err != nil && out.Err == nil {
		out.Reason, out.Err = ReasonFailed, fmt.Errorf("tool outputs: %w", err)
	}
	return out
}

func (e *engine) addTools(tools []Tool) error {
	for _, t := range tools {
		spec := t.Spec()
		if _, ok := e.tools[spec.Name]; ok {
			continue
		}
		s, err := compileSchema(spec.Name, spec.Parameters)
		if err != nil {
			return &SchemaError{Tool: spec.Name, Err: err}
		}
		e.tools[spec.Name], e.schemas[spec.Name] = t, s
		e.names = append(e.names, spec.Name)
		e.specs = append(e.specs, spec)
	}
	return nil
}

func (e *engine) loop(parent, ctx context.Context) Outcome {
	// A resumed conversation can end with tool calls that never ran (the
	// run stopped between the model's answer and its tools): run them
	// before asking the model again.
	if out, done := e.runCalls(parent, ctx, e.out.Turns, PendingCalls(e.out.Messages)); done {
		return out
	}
	for {
		if r, ok := e.stopped(parent, ctx); ok {
			return e.end(r, nil)
		}
		if m := e.cfg.Limits.MaxTurns; m > 0 && e.out.Turns >= m {
			return e.limit(ReasonLimitTurns, "turns", fmt.Sprint(m))
		}
		if m := e.cfg.Limits.MaxTokens; m > 0 && e.out.Usage.TotalTokens >= m {
			return e.limit(ReasonLimitTokens, "tokens", fmt.Sprint(m))
		}
		if e.cfg.MoreTools != nil {
			more, err := e.cfg.MoreTools(ctx)
			if err == nil {
				err = e.addTools(more)
			}
			if err != nil {
				return e.fail(err)
			}
		}
		turn := e.out.Turns + 1
		req := Request{WireAPI: e.wire(), Model: e.cfg.ModelName, Messages: e.out.Messages, Tools: e.specs, Params: e.cfg.Params}
		key, err := e.keys.Key(req)
		if err != nil {
			return e.fail(err)
		}
		if err := e.journal("model.request", ModelRequestEvent{Turn: turn, WireAPI: req.WireAPI, Model: req.Model, Key: key, Messages: len(req.Messages)}); err != nil {
			return e.fail(err)
		}
		resp, err := e.cfg.Model.Complete(ctx, req)
		if err != nil {
			if r, ok := e.stopped(parent, ctx); ok {
				return e.end(r, nil)
			}
			return e.end(ReasonProviderError, err)
		}
		var reported *Usage
		if resp.Usage.TotalTokens == 0 && resp.Usage.PromptTokens == 0 && resp.Usage.CompletionTokens == 0 {
			resp.Usage = estimateUsage(req, resp.Message)
		} else if u, corrected := checkUsage(resp.Usage, req, resp.Message); corrected {
			raw := resp.Usage
			reported, resp.Usage = &raw, u
		}
		if resp.Usage.Model == "" {
			resp.Usage.Model = req.Model
		}
		dropped := 0
		if keep := e.callsKept(); len(resp.Message.ToolCalls) > keep {
			dropped = len(resp.Message.ToolCalls) - keep
			resp.Message.ToolCalls = slices.Clip(resp.Message.ToolCalls[:keep])
		}
		resp.Message.ToolCalls = stableCallIDs(turn, resp.Message.ToolCalls, e.out.Messages)
		e.out.Turns = turn
		e.out.Usage = e.out.Usage.Add(resp.Usage)
		e.out.TurnUsage = append(e.out.TurnUsage, resp.Usage)
		msg := resp.Message
		msg.Role = RoleAssistant
		e.out.Messages = append(e.out.Messages, msg)
		calls := msg.ToolCalls
		if calls == nil {
			calls = []ToolCall{}
		}
		if err := e.journalDeferred("model.response", ModelResponseEvent{Turn: turn, Content: msg.Content, ToolCalls: calls, DroppedCalls: dropped, FinishReason: resp.FinishReason, Reasoning: resp.Reasoning, ReasoningItems: msg.Reasoning, Refusal: resp.Refusal, Usage: resp.Usage, ReportedUsage: reported}); err != nil {
			return e.fail(err)
		}
		e.out.FinishReason = resp.FinishReason
		if len(msg.ToolCalls) > 0 {
			// A response cut short may end inside a call's arguments, and
			// a cut call can still parse ({"path": "a"} of {"path":
			// "a.txt"}): none of its calls is run, whole-looking or not.
			// Calls run only when the response says it ended to make
			// them; every other finish reason, known or not, runs none.
			switch resp.FinishReason {
			case "tool_calls", "function_call", "stop":
			case "length":
				e.out.Final = msg
				return e.end(ReasonTruncated, fmt.Errorf("the response was cut at the completion token limit (finish reason length) with %d tool call(s) whose arguments may be cut too: no tool call was run", len(msg.ToolCalls)))
			case "content_filter":
				e.out.Final = msg
				return e.end(ReasonContentFilter, fmt.Errorf("the provider's content filter stopped the response (finish reason content_filter) with %d tool call(s) that may be cut: no tool call was run", len(msg.ToolCalls)))
			default:
				e.out.Final = msg
				return e.end(ReasonTruncated, fmt.Errorf("the response did not end to make its calls (finish reason %q, not tool_calls or stop) with %d tool call(s) that may be cut: no tool call was run", resp.FinishReason, len(msg.ToolCalls)))
			}
		}
		if len(msg.ToolCalls) == 0 {
			e.out.Final = msg
			switch {
			case resp.FinishReason == "length":
				return e.end(ReasonTruncated, fmt.Errorf("the answer was cut at the completion token limit (finish reason length)"))
			case resp.FinishReason == "content_filter":
				return e.end(ReasonContentFilter, fmt.Errorf("the provider's content filter stopped the answer (finish reason content_filter)"))
			case resp.FinishReason == "incomplete":
				return e.end(ReasonTruncated, fmt.Errorf("the provider ended the answer incomplete (finish reason incomplete): it may be cut"))
			case resp.Refusal != "":
				return e.end(ReasonRefused, fmt.Errorf("%s", resp.Refusal))
			case strings.TrimSpace(msg.Content) == "" && !e.cfg.AllowEmptyAnswer:
				return e.end(ReasonEmptyAnswer, fmt.Errorf("the model ended with an empty answer"))
			}
			if e.cfg.Answer != nil {
				if err := e.cfg.Answer.Check(msg.Content); err != nil {
					if e.out.Rejections >= e.cfg.AnswerRetries {
						return e.end(ReasonAnswerInvalid, err)
					}
					e.out.Rejections++
					feedback := fmt.Sprintf("Your answer does not satisfy the required output schema: %v\nAnswer again with only the JSON value, matching the schema.", err)
					if jerr := e.journal("answer.rejected", AnswerRejectedEvent{Turn: turn, Attempt: e.out.Rejections, Error: err.Error(), Message: feedback}); jerr != nil {
						return e.fail(jerr)
					}
					e.out.Messages = append(e.out.Messages, Message{Role: RoleUser, Content: feedback})
					continue
				}
			}
			return e.end(ReasonCompleted, nil)
		}
		if out, done := e.runCalls(parent, ctx, turn, msg.ToolCalls); done {
			return out
		}
	}
}

// wire is the request's WireAPI: "" for Chat Completions, which keeps the
// keys of recordings made before there was a choice.
func (e *engine) wire() string {
	if e.cfg.WireAPI == WireChat {
		return ""
	}
	return e.cfg.WireAPI
}

// stopped reports whether the caller interrupted the run or the wall-clock
// limit ended it; the caller's context wins when both have ended.
func (e *engine) stopped(parent, ctx context.Context) (Reason, bool) {
	if parent.Err() != nil {
		return ReasonInterrupted, true
	}
	if ctx.Err() != nil {
		if err := e.journal("limit.reached", LimitReachedEvent{Limit: "timeout", Value: e.cfg.Limits.Timeout.String(), Turns: e.out.Turns, Usage: e.out.Usage}); err != nil {
			return ReasonFailed, true
		}
		return ReasonLimitTimeout, true
	}
	return "", false
}

func (e *engine) limit(r Reason, name, value string) Outcome {
	if err := e.journal("limit.reached", LimitReachedEvent{Limit: name, Value: value, Turns: e.out.Turns, Usage: e.out.Usage}); err != nil {
		return e.fail(err)
	}
	return e.end(r, nil)
}

func (e *engine) end(r Reason, err error) Outcome {
	e.out.Reason, e.out.Err = r, err
	return e.out
}

func (e *engine) fail(err error) Outcome { return e.end(ReasonFailed, err) }

// journal appends an event and makes it durable with those deferred
// before it. Every model request follows one (model.request), so nothing
// a resume relies on is ever lost with the request already sent.
func (e *engine) journal(typ string, data any) error {
	if e.cfg.Journal == nil {
		return nil
	}
	_, err := e.cfg.Journal.Append(typ, data)
	return err
}

// journalDeferred appends an event whose fsync can wait for the next
// durable point: the next model request, or the barrier before a tool
// that acts on the world (see invoke). A response, a call's start and its
// end are grouped this way; a crash before the durable point costs at
// most a repeated model request or a repeated read, never a repeated
// side effect.
func (e *engine) journalDeferred(typ string, data any) error {
	if e.cfg.Journal == nil {
		return nil
	}
	_, err := e.cfg.Journal.AppendDeferred(typ, data)
	return err
}

// callTool runs one tool call and records it. Problems with the call
// itself become error results the model sees; only a harness fault (a Go
// error from the tool, or a failed write) is returned.
func (e *engine) callTool(ctx context.Context, turn int, call ToolCall, refused *ToolResult, refusedCode string) error {
	if err := e.journalDeferred("tool.started", ToolStartedEvent{Turn: turn, CallID: call.ID, Tool: call.Name, Arguments: call.Arguments}); err != nil {
		return err
	}
	res, code, toolErr := ToolResult{}, "", error(nil)
	if refused != nil {
		// A person refused it, or it is past the turn's bound: it never
		// runs; the model is told why.
		res, code = *refused, refusedCode
	} else {
		res, code, toolErr = e.invoke(ctx, turn, call)
	}
	if aw := (*AwaitingError)(nil); errors.As(toolErr, &aw) {
		// The call's work waits for a person: it stays started and
		// unfinished, and a resume runs it again.
		return toolErr
	}
	if toolErr != nil && ctx.Err() != nil {
		// Stopped mid-call (interrupt or timeout): the call stays started
		// but unfinished in the journal, which is what resume acts on.
		return errStoppedInCall
	}
	if toolErr != nil {
		res = ErrorResult("tool_failed", fmt.Sprintf("%s failed inside harness: %v", call.Name, toolErr), nil)
		code = "tool_failed"
	}
	if res.Status == "" {
		res.Status = StatusOK
	}
	out, digest, inline, err := e.writeOutput(turn, call, res)
	if err != nil {
		return err
	}
	if err := e.journalDeferred("tool.finished", ToolFinishedEvent{Turn: turn, CallID: call.ID, Tool: call.Name, Status: res.Status, Code: code, Output: out, OutputDigest: digest, OutputBytes: inline}); err != nil {
		return err
	}
	e.out.Messages = append(e.out.Messages, Message{Role: RoleTool, Content: res.Content, ToolCallID: call.ID})
	e.out.Usage = e.out.Usage.Add(res.Usage)
	if res.Usage.Model != "" {
		e.out.ToolUsage = append(e.out.ToolUsage, res.Usage)
	}
	if toolErr != nil {
		return fmt.Errorf("tool %s: %w", call.Name, toolErr)
	}
	if code == codePolicyEnd {
		return errPolicyEnd
	}
	return nil
}

// codePolicyEnd marks a denial that ends the run (--fail-on-denial).
const codePolicyEnd = "policy_denied_end"

// codeRefusedByPerson marks a call a person refused when asked.
const codeRefusedByPerson = "refused_by_person"

var errPolicyEnd = errors.New("a policy denial ended the run")

var errStoppedInCall = errors.New("stopped during a tool call")

func (e *engine) invoke(ctx context.Context, turn int, call ToolCall) (ToolResult, string, error) {
	t, ok := e.tools[call.Name]
	if !ok {
		msg := fmt.Sprintf("there is no tool named %q; available tools: %s", call.Name, strings.Join(e.names, ", "))
		return ErrorResult("tool_unknown", msg, nil), "tool_unknown", nil
	}
	args := json.RawMessage(call.Arguments)
	if strings.TrimSpace(call.Arguments) == "" {
		args = json.RawMessage("{}")
	}
	if err := e.checkArgs(call); err != nil {
		return *err, errorCode(err.Content), nil
	}
	if e.cfg.Gate != nil {
		if denied, end := e.cfg.Gate.Before(ctx, turn, call, t.Effect()); denied != nil {
			code := "policy_denied"
			if end {
				code = codePolicyEnd
			}
			return *denied, code, nil
		}
	}
	if t.Effect() != EffectRead && e.cfg.Journal != nil {
		// The call's start (and its policy decision) must be on disk
		// before it can change anything, or a resume could run it twice.
		if err := e.cfg.Journal.Sync(); err != nil {
			return ToolResult{}, "", err
		}
	}
	res, err := t.Call(WithTurn(WithUsage(ctx, e.out.Usage), turn), call, args)
	if err != nil {
		return res, "", err
	}
	if e.cfg.Gate != nil {
		res = e.cfg.Gate.After(call, t.Effect(), res)
	}
	code := ""
	if res.Status == StatusError {
		code = errorCode(res.Content)
	}
	return res, code, nil
}
