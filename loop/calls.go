package loop

import (
	"fmt"
	"strings"
)

// estimateUsage counts what a response without usage cost, at the common
// rule of thumb of four characters a token: an estimate, marked as such,
// so that --max-tokens still binds on an endpoint that reports nothing.
func estimateUsage(req Request, msg Message) Usage {
	in := 0
	for _, m := range req.Messages {
		in += len(m.Content)
		for _, c := range m.ToolCalls {
			in += len(c.Name) + len(c.Arguments)
		}
	}
	for _, t := range req.Tools {
		in += len(t.Description) + len(t.Parameters)
	}
	out := len(msg.Content)
	for _, c := range msg.ToolCalls {
		out += len(c.Name) + len(c.Arguments)
	}
	u := Usage{PromptTokens: int64(in+3) / 4, CompletionTokens: int64(out+3) / 4, Estimated: true}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u
}

// maxUsageCount is the most tokens one response is counted as spending,
// per count: far beyond any real request, and small enough that a run's
// sum cannot overflow.
const maxUsageCount = 1 << 40

// checkUsage holds a provider's counts to what they can be: a negative
// count (which would lower the run's total, so --max-tokens never binds
// and --price costs less than nothing) is replaced by harness's estimate,
// one beyond maxUsageCount is capped, and a total below its parts is their
// sum. corrected says whether any count was changed (then u is marked).
func checkUsage(u Usage, req Request, msg Message) (_ Usage, corrected bool) {
	var est *Usage
	estimate := func() Usage {
		if est == nil {
			e := estimateUsage(req, msg)
			est = &e
		}
		return *est
	}
	fix := func(n *int64, fallback func() int64) {
		switch {
		case *n < 0:
			*n, corrected = fallback(), true
		case *n > maxUsageCount:
			*n, corrected = maxUsageCount, true
		}
	}
	zero := func() int64 { return 0 }
	fix(&u.PromptTokens, func() int64 { return estimate().PromptTokens })
	fix(&u.CompletionTokens, func() int64 { return estimate().CompletionTokens })
	fix(&u.CachedTokens, zero)
	fix(&u.ReasoningTokens, zero)
	fix(&u.TotalTokens, zero)
	if sum := u.PromptTokens + u.CompletionTokens; u.TotalTokens < sum {
		u.TotalTokens, corrected = sum, true
	}
	if est != nil {
		u.Estimated = true
	}
	u.Corrected = u.Corrected || corrected
	return u, corrected
}

// stableCallIDs gives a tool call without an id, or with one already used
// in the conversation or the same answer, a deterministic one from its
// turn and index: results are matched to calls by id, and a replay must
// produce the same ids.
func stableCallIDs(turn int, calls []ToolCall, history []Message) []ToolCall {
	seen := map[string]bool{}
	for _, m := range history {
		for _, c := range m.ToolCalls {
			seen[c.ID] = true
		}
	}
	for i := range calls {
		if calls[i].ID == "" || seen[calls[i].ID] {
			calls[i].ID = fmt.Sprintf("call_t%d_%d", turn, i+1)
		}
		seen[calls[i].ID] = true
	}
	return calls
}

// FileSafe keeps ids chosen by the model from naming paths: only
// [A-Za-z0-9_-] survive, and the length is bounded.
func FileSafe(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r == '-' || r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
		if b.Len() >= 64 {
			break
		}
	}
	if b.Len() == 0 {
		return "call"
	}
	return b.String()
}

// PendingCalls returns the tool calls of the last assistant message that
// have no tool result after it, in order.
func PendingCalls(msgs []Message) []ToolCall {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != RoleAssistant {
			continue
		}
		answered := map[string]bool{}
		for _, m := range msgs[i+1:] {
			if m.Role == RoleTool {
				answered[m.ToolCallID] = true
			}
		}
		var out []ToolCall
		for _, c := range msgs[i].ToolCalls {
			if !answered[c.ID] {
				out = append(out, c)
			}
		}
		return out
	}
	return nil
}

// codeTooManyCalls answers a call past --max-tool-calls-per-turn.
const codeTooManyCalls = "tool_calls_per_turn"

// overBound are the calls of the turn's answer past the bound, by id, each
// with the result it gets instead of running. They are counted in the
// answer as the model gave it, so a resumed turn refuses the same ones.
func (e *engine) overBound() map[string]*ToolResult {
	m := e.cfg.Limits.MaxToolCallsPerTurn
	var answer []ToolCall
	for i := len(e.out.Messages) - 1; i >= 0; i-- {
		if e.out.Messages[i].Role == RoleAssistant {
			answer = e.out.Messages[i].ToolCalls
			break
		}
	}
	if m <= 0 || len(answer) <= m {
		return nil
	}
	msg := fmt.Sprintf("this answer made %d tool calls; at most %d run in one turn (--max-tool-calls-per-turn), so this one did not run: make fewer calls, and call again what is still needed", len(answer), m)
	over := map[string]*ToolResult{}
	for _, c := range answer[m:] {
		res := ErrorResult(codeTooManyCalls, msg, nil)
		over[c.ID] = &res
	}
	return over
}
