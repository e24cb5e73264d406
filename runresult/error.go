package runresult

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/harness-dev/harness/internal/termsafe"
	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
)

// ErrorOf maps how the loop ended to the run's error (nil = success).
func ErrorOf(o *loop.Outcome) error {
	switch o.Reason {
	case loop.ReasonCompleted, loop.ReasonAwaitingApproval:
		// Awaiting approval is told by the runner, which knows the run
		// directory the message names (AwaitingMessage).
		return nil
	case loop.ReasonLimitTurns, loop.ReasonLimitTokens, loop.ReasonLimitTimeout:
		return &outcome.Error{Code: strings.ReplaceAll(string(o.Reason), ".", "_"), Msg: limitMessage(o.Reason), Exit: outcome.ExitLimit, Err: o.Err}
	case loop.ReasonInterrupted:
		return &outcome.Error{Code: "interrupted", Msg: "interrupted: the run stopped at a safe point; continue it with `harness resume`", Exit: outcome.ExitInterrupted, Err: o.Err}
	case loop.ReasonPolicyDenied:
		return &outcome.Error{Code: "policy_denied", Msg: "a tool call was denied by the CFC policy and --fail-on-denial ends the run; see policy-trace.json", Exit: outcome.ExitPolicy, Err: o.Err}
	case loop.ReasonTruncated, loop.ReasonContentFilter, loop.ReasonEmptyAnswer, loop.ReasonAnswerInvalid, loop.ReasonRefused:
		return &outcome.Error{Code: string(o.Reason), Msg: answerMessage(o), Exit: outcome.ExitFailed, Err: o.Err}
	case loop.ReasonProviderError:
		return providerOutcome(o.Err)
	default:
		var oe *outcome.Error
		if errors.As(o.Err, &oe) {
			return oe
		}
		var se *loop.SchemaError
		if errors.As(o.Err, &se) {
			return &outcome.Error{Code: "tool_schema_invalid", Exit: outcome.ExitFailed, Err: o.Err,
				Msg: se.Error() + ": the tool's author (its MCP server or skill) must fix it; until then leave the tool out of --allow-tool"}
		}
		msg := "the run failed"
		if o.Err != nil {
			msg = o.Err.Error()
		}
		return &outcome.Error{Code: "run_failed", Msg: msg, Exit: outcome.ExitFailed, Err: o.Err}
	}
}

func answerMessage(o *loop.Outcome) string {
	if n := len(o.Final.ToolCalls); n > 0 && (o.Reason == loop.ReasonTruncated || o.Reason == loop.ReasonContentFilter) {
		if o.Reason == loop.ReasonContentFilter {
			return fmt.Sprintf("the provider's content filter stopped the model's response (finish reason content_filter) with %d tool call(s) that may be cut: no tool call was run", n)
		}
		if o.FinishReason != "length" {
			return fmt.Sprintf("the model's response did not end to make its calls (finish reason %q, not tool_calls or stop) with %d tool call(s) that may be cut: no tool call was run; check the provider's limits and run again", o.FinishReason, n)
		}
		return fmt.Sprintf("the model's response was cut at the completion token limit (finish reason length) with %d tool call(s) whose arguments may be cut too: no tool call was run; raise --max-completion-tokens (or the provider's own cap) and run again", n)
	}
	switch o.Reason {
	case loop.ReasonTruncated:
		if o.FinishReason != "length" {
			return fmt.Sprintf("the provider ended the answer incomplete (finish reason %q): it is kept in result.json but is not a complete answer", o.FinishReason)
		}
		return "the answer was cut at the completion token limit (finish reason length); it is kept in result.json but is not a complete answer"
	case loop.ReasonContentFilter:
		return "the provider's content filter stopped the answer (finish reason content_filter)"
	case loop.ReasonEmptyAnswer:
		return "the model ended with an empty answer (pass --allow-empty-answer if that is acceptable)"
	case loop.ReasonRefused:
		return fmt.Sprintf("the model refused to answer: %v", o.Err)
	}
	return fmt.Sprintf("the answer does not match --output-schema after %d retries: %v", o.Rejections, o.Err)
}

// providerOutcome decides what a provider failure means for the run: a
// key or endpoint the operator must fix is a configuration error (exit 2);
// a request the server rejects (with a 4xx status, or inside an answer it
// sent as a success) will be rejected again, so the run failed
// (exit 1, not resumable); a timeout, a conflict, a rate limit, a server
// error or a broken connection, once the retries are spent, is an outage
// (exit 4, resumable, possibly on another endpoint).
func providerOutcome(err error) error {
	msg := "model provider error"
	if err != nil {
		msg = err.Error()
	}
	var pe *loop.ProviderError
	status, rejected := 0, false
	if errors.As(err, &pe) {
		status, rejected = pe.Status, pe.Rejected
	}
	switch {
	case rejected:
		// Refused inside an answer the server sent as a success (a
		// stream's error, a failed response): as refused as a 400.
		return &outcome.Error{Code: "provider_rejected", Msg: msg, Exit: outcome.ExitFailed, Err: err}
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return &outcome.Error{Code: "provider_auth", Msg: msg, Exit: outcome.ExitUsage, Err: err}
	case status == http.StatusNotFound:
		return &outcome.Error{Code: "provider_not_found", Msg: msg, Exit: outcome.ExitUsage, Err: err}
	case status >= 400 && status < 500 && status != http.StatusRequestTimeout && status != http.StatusConflict && status != http.StatusTooManyRequests:
		return &outcome.Error{Code: "provider_rejected", Msg: msg, Exit: outcome.ExitFailed, Err: err}
	}
	return &outcome.Error{Code: "provider_error", Msg: msg, Exit: outcome.ExitProvider, Err: err}
}

func limitMessage(reason loop.Reason) string {
	switch reason {
	case loop.ReasonLimitTurns:
		return "turn limit reached (--max-turns): raise it and continue with `harness resume`"
	case loop.ReasonLimitTokens:
		return "token limit reached (--max-tokens): raise it and continue with `harness resume`"
	default:
		return "time limit reached (--timeout): continue with `harness resume`"
	}
}

// AwaitingMessage tells the operator what to do with the waiting calls.
func AwaitingMessage(runDir string, pending []record.PendingApproval) string {
	var ids []string
	for _, c := range pending {
		ids = append(ids, fmt.Sprintf("%s (%s)", termsafe.Escape(c.CallID), termsafe.Escape(c.Tool)))
	}
	first := ""
	if len(pending) > 0 {
		first = termsafe.Escape(pending[0].CallID)
	}
	return fmt.Sprintf("waiting for a person to decide %s: run `harness resume %s --approve %s` to run it, or `--deny %s --reason TEXT` to refuse it; `harness approvals` lists every waiting call",
		strings.Join(ids, ", "), runDir, first, first)
}
