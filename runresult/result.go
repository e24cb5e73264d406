package runresult

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/cfc"
	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/runopts"
)

// statusWord is the one-word status of result.json for a run status.
var statusWord = map[string]string{
	outcome.StatusSucceeded: "succeeded", outcome.StatusFailed: "failed", outcome.StatusLimit: "limit",
	outcome.StatusProvider: "provider_error", outcome.StatusRefused: "refused", outcome.StatusInterrupted: "interrupted",
	outcome.StatusApproval: "awaiting_approval",
}

// Reason names the cause in result.json's vocabulary, which run.json
// and the journal's run.finished share.
func Reason(o *loop.Outcome, rec *outcome.Record) string {
	if rec != nil {
		switch rec.Code {
		case "limit_turns":
			return "max_turns"
		case "limit_tokens":
			return "max_tokens"
		case "limit_timeout":
			return "timeout"
		case "policy_denied":
			return "policy_denial"
		case "drift_detected":
			return "drift"
		}
		return rec.Code
	}
	if o != nil {
		return string(o.Reason)
	}
	return "completed"
}

// Run is what result.json says of a run besides how its loop ended: the
// runner fills it in when the run finishes.
type Run struct {
	ID, Dir string
	// Model and WireAPI are the run's own; FallbackUsed says
	// --fallback-model took over.
	Model, WireAPI string
	FallbackUsed   bool
	// Pending are the calls waiting for a person when the run stopped.
	Pending  []record.PendingApproval
	Segments []record.Segment
	Redact   *artifacts.Redactor
	// PrevAnswer is an earlier segment's answer, kept when this segment
	// gave none.
	PrevAnswer string
	Prices     []string // --price entries, checked with the options
	Schema     *loop.SchemaCheck
	// Decisions are the gate's, nil without a gate.
	Decisions []record.TraceRecord
	Limits    loop.Limits
}

// Result builds result.json: the outcome in the terms a CI job acts on.
func (r Run) Result(o *loop.Outcome, status string, exit int, resumable bool, rec *outcome.Record) *record.Result {
	res := &record.Result{
		Type: record.TypeResult, Version: record.Version, RunID: r.ID, RunDir: r.Dir,
		Status: statusWord[status], Reason: Reason(o, rec), ExitCode: exit, IsError: exit != outcome.ExitOK,
		Model: r.Model, WireAPI: r.WireAPI, FallbackUsed: r.FallbackUsed,
		ToolCalls: map[string]int{}, Denials: []record.Denial{}, Resumable: resumable,
		Usage: record.ResultUsage{UsageSource: "provider"},
	}
	if rec != nil {
		res.Message = rec.Message
	}
	res.PendingApprovals = r.Pending
	for _, s := range r.Segments {
		if s.FinishedAt != nil {
			res.DurationMs += s.FinishedAt.Sub(s.StartedAt).Milliseconds()
		}
	}
	if o != nil {
		res.Answer = r.Redact.String(cmp.Or(o.Final.Content, r.PrevAnswer))
		res.FinishReason = o.FinishReason
		res.Turns = o.Turns
		res.Usage.PromptTokens, res.Usage.CompletionTokens = o.Usage.PromptTokens, o.Usage.CompletionTokens
		res.Usage.CachedTokens, res.Usage.ReasoningTokens, res.Usage.TotalTokens = o.Usage.CachedTokens, o.Usage.ReasoningTokens, o.Usage.TotalTokens
		if o.Usage.Estimated {
			res.Usage.UsageSource = "missing"
		}
		res.Usage.Corrected = o.Usage.Corrected
		res.UsageByModel = record.ByModel(append(slices.Clone(o.TurnUsage), o.ToolUsage...), r.Model)
		prices, _ := runopts.PriceMap(r.Prices) // checked with the options
		res.Cost, res.Unpriced = record.Priced(res.UsageByModel, prices)
		for _, m := range o.Messages {
			for _, c := range m.ToolCalls {
				res.ToolCalls[c.Name]++
			}
		}
		if r.Schema != nil {
			switch o.Reason {
			case loop.ReasonCompleted:
				if v, err := r.Schema.Parse(o.Final.Content); err == nil {
					res.StructuredOutput = json.RawMessage(r.Redact.Bytes(v))
				}
			case loop.ReasonAnswerInvalid:
				if o.Err != nil {
					res.SchemaErrors = strings.Split(o.Err.Error(), "; ")
				}
			}
		}
	}
	for _, d := range r.Decisions {
		if d.Decision.Decision == cfc.Deny {
			res.Denials = append(res.Denials, record.Denial{Tool: d.Tool, Reason: d.Reasons[0], CallID: d.CallID})
		}
	}
	if resumable {
		res.ResumeCommand, res.ResumeEstimate = resumeCommand(r.Dir, res.Reason, r.Limits, res.Turns, res.Usage.TotalTokens)
	}
	return res
}

// minMoreTurns is the fewest turns a resume after --max-turns is offered:
// a run stopped after one turn has said little about how many it needs.
const minMoreTurns = 3

// resumeCommand is the command line that continues the run; after a limit
// it raises that limit, or the resume would stop at once. How far is an
// estimate from the run's own pace (said in estimate): nothing tells how
// many turns a model still needs, so a run is offered as many turns again
// as it has used (at least minMoreTurns), and tokens at its rate per turn
// for as many turns.
func resumeCommand(dir, reason string, l loop.Limits, turns int, tokens int64) (cmd, estimate string) {
	cmd = "harness resume " + shellQuote(dir)
	more := max(turns, minMoreTurns)
	switch {
	case reason == "max_turns" && l.MaxTurns > 0:
		cmd += fmt.Sprintf(" --max-turns +%d", more)
		estimate = fmt.Sprintf("an estimate: the run used %d turn%s without finishing; as many again (at least %d) is a guess, not a promise", turns, plural(turns), minMoreTurns)
	case reason == "max_tokens" && l.MaxTokens > 0:
		perTurn := l.MaxTokens
		if turns > 0 && tokens > 0 {
			perTurn = (tokens + int64(turns) - 1) / int64(turns)
		}
		limit := max(l.MaxTokens, tokens) + perTurn*int64(more)
		limit = (limit + 999) / 1000 * 1000
		cmd += fmt.Sprintf(" --max-tokens %d", limit)
		estimate = fmt.Sprintf("an estimate: the run used about %d tokens a turn; this allows %d more turns at that rate, a guess, not a promise", perTurn, more)
	case reason == "drift":
		cmd += " --allow-drift"
	}
	return cmd, estimate
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Attempt is the result.json of an invocation that ended before any
// run began (a usage error, a refusal, an unusable run directory): what a
// job finds at --result-file instead of an earlier run's result.
func Attempt(err error) *record.Result {
	e := outcome.As(err)
	status, _ := outcome.Status(e.Exit)
	return &record.Result{
		Type: record.TypeResult, Version: record.Version,
		Status: statusWord[status], Reason: e.Code, ExitCode: e.Exit, IsError: true, Message: e.Msg,
		ToolCalls: map[string]int{}, Denials: []record.Denial{}, Usage: record.ResultUsage{UsageSource: "none"},
	}
}
