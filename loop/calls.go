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
// one beyond maxUsageCount is capped, cached tokens beyond the prompt are
// the prompt's, and a total below its parts is their sum. corrected says whether any count was changed (then u is marked).
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
	// Cached tokens are a part of the prompt: more of them than the prompt
	// holds is a provider's error, and would price or report a discount
	// on tokens never sent.
	if u.CachedTokens > u.PromptTokens {
		u.CachedTokens, corrected = u.PromptTokens, true
	}
	if sum := u.PromptTokens + u.CompletionTokens; u.TotalTokens < sum {
		u.TotalTokens, corrected = sum, true
	}
	if est != nil {
		u.Estimated = true
	}
	u.Corrected = u.Corrected || corrected
	return u, corrected
}

// stableCallIDs gives every tool call an id harness can show and use:
// the model's id when it is plain (PlainCallID) and not already used in
// the conversation or the same answer, else a deterministic one from its
// turn and index, so that a replay from a cassette and a resume produce
// the same ids. Results are matched to calls by id. A model's id that is
// replaced only for its form is kept as ModelID and goes back to the
// model on the wire; one that is empty or already used has nothing to go
// back as.
func stableCallIDs(turn int, calls []ToolCall, history []Message) []ToolCall {
	seen := map[string]bool{}
	for _, m := range history {
		for _, c := range m.ToolCalls {
			seen[c.ID] = true
			seen[c.WireID()] = true
		}
	}
	wire := map[string]bool{}
	for i := range calls {
		id := calls[i].ID
		if PlainCallID(id) && !seen[id] {
			seen[id], wire[id] = true, true
			continue
		}
		if id != "" && !seen[id] && !wire[id] {
			calls[i].ModelID = id
			wire[id] = true
		}
		minted := fmt.Sprintf("call_t%d_%d", turn, i+1)
		for n := 2; seen[minted]; n++ {
			minted = fmt.Sprintf("call_t%d_%d_%d", turn, i+1, n)
		}
		calls[i].ID = minted
		seen[minted] = true
	}
	return calls
}

// PlainCallID reports whether a model's call id can be shown, typed on a
// command line and named in a file as it is: 1 to 64 of [A-Za-z0-9_-].
// Providers' own ids (call_..., toolu_...) are; an id holding a control
// sequence, a space, a quote or a shell character is not, and is replaced.
func PlainCallID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c == '-' || c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// wireIDs maps the ids harness gave calls to the ids the model gave them,
// for the results sent back in a request.
func wireIDs(msgs []Message) map[string]string {
	out := map[string]string{}
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			if c.ModelID != "" {
				out[c.ID] = c.ModelID
			}
		}
	}
	return out
}

// resultWireID is the id a tool result goes back to the model with.
func resultWireID(ids map[string]string, id string) string {
	if w, ok := ids[id]; ok {
		return w
	}
	return id
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

// maxCallsKept bounds the calls of one answer harness keeps when no
// per-turn bound is set.
const maxCallsKept = 1024

// callsKept is how many calls of one answer harness keeps: twice the
// per-turn bound, so that a model that asked for a few too many is told
// which did not run, and no more. Every call kept is answered, recorded
// and journaled whether it runs or not, so an answer of thousands of
// calls (a few megabytes) would otherwise grow the run directory a
// hundredfold; the calls past this are dropped from the answer before
// anything records it, and the answer's record says how many.
func (e *engine) callsKept() int {
	if m := e.cfg.Limits.MaxToolCallsPerTurn; m > 0 {
		return 2 * m
	}
	return maxCallsKept
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
	// The count is of the calls kept: those past callsKept were dropped
	// from the answer, and the model is told so whenever there may be any.
	msg := fmt.Sprintf("this answer made %d tool calls; at most %d run in one turn (--max-tool-calls-per-turn), so this one did not run: make fewer calls, and call again what is still needed", len(answer), m)
	if len(answer) >= e.callsKept() {
		msg = fmt.Sprintf("this answer made %d or more tool calls (any past %d were dropped unanswered); at most %d run in one turn (--max-tool-calls-per-turn), so this one did not run: make fewer calls, and call again what is still needed", len(answer), len(answer), m)
	}
	over := map[string]*ToolResult{}
	for _, c := range answer[m:] {
		res := ErrorResult(codeTooManyCalls, msg, nil)
		over[c.ID] = &res
	}
	return over
}
