package gate

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/cfc"
	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/tools"
)

// Host is what the gate needs of the run it guards.
type Host interface {
	// RecordDecision journals a decision; the loop makes it durable
	// before a call that acts on the world runs.
	RecordDecision(record.PolicyDecision) error
	Event(typ string, data any)
	Progress(format string, args ...any)
	Redact(s string) string
	Now() time.Time
}

// Config is the policy a gate enforces and what it reports to.
type Config struct {
	Policy cfc.Policy
	// Operator is the operator's prompt, and OperatorValues the values
	// the operator gave one by one (see cfc.Call): where the policy asks
	// where an argument came from, these are the operator's.
	Operator       string
	OperatorValues []string
	// AllowTools are the operator's --allow-tool entries (an MCP server's
	// KEY__* allows each tool it lists).
	AllowTools []string
	// Narrowing, when set, is what the active skills' allowed-tools leave
	// (--honor-allowed-tools), asked at each call.
	Narrowing       func() []string
	AllowUnmediated bool
	FailOnDenial    bool
	// Resumed are the decisions a resumed run's journal holds.
	Resumed []record.TraceRecord
	Host    Host
}

// Gate is the loop's Gate: it labels the context, asks cfc for a
// decision on every call, withholds unmediated output and scans what the
// model is about to read.
type Gate struct {
	cfg Config

	mu        sync.Mutex
	labels    []cfc.Label
	untrusted *cfc.Provenance
	trace     record.PolicyTrace
	snapshot  record.PolicySnapshot
}

// New labels the conversation the loop starts from: skill context,
// attachments and every tool result in it are untrusted context. A
// resumed run continues the trace it started, from the journal's
// (chained) decisions, not from a policy-trace.json that may have been
// edited since.
func New(cfg Config, history []loop.Message) *Gate {
	g := &Gate{cfg: cfg, untrusted: cfc.NewProvenance(),
		trace: record.PolicyTrace{Envelope: artifacts.NewEnvelope(record.TypePolicyTrace, record.Version), Decisions: []record.TraceRecord{}, Totals: map[string]int{cfc.Allow: 0, cfc.Deny: 0, cfc.Warn: 0}}}
	g.labels = []cfc.Label{{Role: cfc.RoleDirectCommand, Integrity: cfc.Trusted, Sources: []string{"harness"}}, cfc.Operator(cfg.Policy.PromptRole)}
	for _, m := range contextItems(history) {
		g.observe(m.source, m.text)
	}
	for _, d := range cfg.Resumed {
		g.trace.Decisions = append(g.trace.Decisions, d)
		g.trace.Totals[d.Decision.Decision]++
	}
	return g
}

// SetSnapshot is the policy snapshot every later decision names.
func (g *Gate) SetSnapshot(ps record.PolicySnapshot) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.snapshot = ps
}

// Trace is every decision so far, for policy-trace.json.
func (g *Gate) Trace() record.PolicyTrace {
	g.mu.Lock()
	defer g.mu.Unlock()
	t := g.trace
	t.Decisions = slices.Clone(t.Decisions)
	t.Totals = maps.Clone(t.Totals)
	return t
}

type contextItem struct{ source, text string }

// contextItems are the untrusted parts of a conversation: skill context
// blocks (by skill, in name order) and tool results (by tool).
func contextItems(history []loop.Message) []contextItem {
	var skillItems, toolItems []contextItem
	toolOf := map[string]string{}
	for _, m := range history {
		switch {
		case m.Role == loop.RoleAssistant:
			for _, c := range m.ToolCalls {
				toolOf[c.ID] = c.Name
			}
		case m.Role == loop.RoleTool:
			toolItems = append(toolItems, contextItem{"tool:" + toolOf[m.ToolCallID], m.Content})
		case m.Role == loop.RoleUser && strings.HasPrefix(m.Content, tools.SkillContextMarker):
			skillItems = append(skillItems, contextItem{"skill:" + skillNameOf(m.Content), m.Content})
		case m.Role == loop.RoleUser && strings.HasPrefix(m.Content, tools.AttachmentMarker):
			toolItems = append(toolItems, contextItem{"attachment", m.Content})
		}
	}
	slices.SortStableFunc(skillItems, func(a, b contextItem) int { return strings.Compare(a.source, b.source) })
	return append(skillItems, toolItems...)
}

func skillNameOf(block string) string {
	for _, line := range strings.SplitN(block, "\n", 5) {
		if name, ok := strings.CutPrefix(line, "Skill: "); ok {
			return name
		}
	}
	return ""
}

// observe adds an untrusted item to the context. The provenance filter
// gets the text as the model reads it, decoded: a tool result is JSON, and
// its encoding escapes &, <, > and newlines that an argument copied from
// it would not have.
func (g *Gate) observe(source, text string) {
	g.labels = append(g.labels, cfc.Observed(source))
	for _, t := range decodedTexts(text) {
		g.untrusted.Add(t)
	}
}

// decodedTexts are the texts a result holds: every string value of it
// when it is JSON (decoded), else the text itself.
func decodedTexts(content string) []string {
	if vs := stringArgs(content); vs != nil {
		return vs
	}
	return []string{content}
}

func (g *Gate) Before(ctx context.Context, turn int, call loop.ToolCall, effect loop.Effect) (*loop.ToolResult, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	p := g.cfg.Policy
	if g.cfg.Narrowing != nil {
		p.Narrowing = g.cfg.Narrowing()
	}
	if strings.Contains(call.Name, tools.MCPSeparator) && tools.MCPAllowed(g.cfg.AllowTools, call.Name) {
		// An MCP tool allowed by its server's KEY__* is allowed by name:
		// the operator allowed every tool that server lists.
		p.AllowedTools = append(slices.Clone(p.AllowedTools), call.Name)
	}
	d := cfc.Decide(p, cfc.Call{
		Tool: call.Name, Effect: cfc.Effect(effect), Args: stringArgs(call.Arguments),
		Context: cfc.JoinAll(g.labels...), Operator: g.cfg.Operator, OperatorValues: g.cfg.OperatorValues, Untrusted: g.untrusted,
	})
	g.trace.Decisions = append(g.trace.Decisions, record.TraceRecord{Turn: turn, CallID: call.ID, At: g.cfg.Host.Now().UTC(), SnapshotDigest: g.snapshot.Digest, Decision: d})
	g.trace.Totals[d.Decision]++
	// Deferred: the engine makes it durable before a call that acts on
	// the world; a denial or a read has nothing to protect.
	if err := g.cfg.Host.RecordDecision(record.PolicyDecision{Turn: turn, CallID: call.ID, SnapshotDigest: g.snapshot.Digest, Decision: d}); err != nil {
		// A decision that cannot be recorded is not acted on: the call is
		// refused and the run ends.
		res := loop.ErrorResult("journal_write_failed", "harness could not record the policy decision for this call: "+err.Error(), nil)
		return &res, true
	}
	if d.Decision != cfc.Deny {
		return nil, false
	}
	reason := d.Reasons[0]
	b, _ := json.Marshal(map[string]any{"type": "harness.observation-denied", "reason": reason, "reasons": d.Reasons, "detail": d.Detail,
		"error": map[string]string{"code": "policy_denied", "message": d.Detail}})
	res := loop.ToolResult{Content: string(b), Status: loop.StatusError, Record: d}
	g.cfg.Host.Progress("policy denied %s: %s", call.Name, d.Detail)
	return &res, g.cfg.FailOnDenial
}

func (g *Gate) After(call loop.ToolCall, effect loop.Effect, res loop.ToolResult) loop.ToolResult {
	g.mu.Lock()
	defer g.mu.Unlock()
	var target string
	var exit *int
	switch ex := res.Record.(type) {
	case *record.ScriptExecution:
		target, exit = ex.ExecutionTarget, ex.ExitCode
	case *record.CommandExecution:
		target, exit = ex.ExecutionTarget, ex.ExitCode
	}
	if target == "host" && cfc.WithholdUnmediated(g.cfg.Policy.Mode, false, g.cfg.AllowUnmediated) {
		b, _ := json.Marshal(map[string]any{"type": "harness.output-withheld", "handle": call.ID, "reason": "unmediated_execution",
			"detail":   "the code ran outside harness's sandbox (--sandbox none); its output is withheld in enforce modes (--cfc-allow-unmediated shows it)",
			"exitCode": exit})
		res.Content = string(b)
		g.cfg.Host.Event(record.EventOutputWithheld, map[string]string{"callId": call.ID, "tool": call.Name, "reason": "unmediated_execution"})
	}
	// harness knows the key: whatever a tool returns (a script run with
	// --sandbox none that read it, a file that holds it), the model and
	// the tool-output record never see it.
	res.Content = g.cfg.Host.Redact(res.Content)
	g.observe("tool:"+call.Name, res.Content)
	// The scan reads decoded text: in the JSON encoding a second line
	// follows a literal \n, where no rule anchored on a word boundary
	// would ever match.
	var fs []cfc.Finding
	for _, t := range decodedTexts(res.Content) {
		fs = append(fs, cfc.Scan(t)...)
	}
	if len(fs) > 0 {
		g.cfg.Host.Event(record.EventContentFlagged, map[string]any{"callId": call.ID, "tool": call.Name, "findings": fs})
	}
	return res
}

// stringArgs collects every string value in a call's JSON arguments.
func stringArgs(raw string) []string {
	var v any
	if json.Unmarshal([]byte(raw), &v) != nil {
		return nil
	}
	var out []string
	var walk func(any)
	walk = func(x any) {
		switch t := x.(type) {
		case string:
			out = append(out, t)
		case []any:
			for _, e := range t {
				walk(e)
			}
		case map[string]any:
			keys := make([]string, 0, len(t))
			for k := range t {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				walk(t[k])
			}
		}
	}
	walk(v)
	return out
}
