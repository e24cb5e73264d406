package run

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/cfc"
	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/skills"
	"github.com/harness-dev/harness/tools"
)

// policyGate is the loop's Gate: it labels the context, asks cfc for a
// decision on every call, withholds unmediated output and scans what the
// model is about to read.
type policyGate struct {
	r      *runner
	policy cfc.Policy

	mu        sync.Mutex
	labels    []cfc.Label
	untrusted *cfc.Provenance
	trace     record.PolicyTrace
	snapshot  record.PolicySnapshot
}

// newGate labels the conversation the loop starts from: skill context and
// every tool result in it are untrusted context. A resumed run continues
// the trace it started.
func (r *runner) newGate(history []loop.Message) *policyGate {
	mode, _ := cfc.ParseMode(r.opts.CFCMode)
	role, _ := cfc.ParseRole(r.opts.PromptRole)
	g := &policyGate{r: r, policy: cfc.Policy{Mode: mode, PromptRole: role, AllowedTools: nonNil(r.opts.AllowTools)}, untrusted: cfc.NewProvenance(),
		trace: record.PolicyTrace{Envelope: artifacts.NewEnvelope(record.TypePolicyTrace, record.Version), Decisions: []record.TraceRecord{}, Totals: map[string]int{cfc.Allow: 0, cfc.Deny: 0, cfc.Warn: 0}}}
	g.labels = []cfc.Label{{Role: cfc.RoleDirectCommand, Integrity: cfc.Trusted, Sources: []string{"harness"}}, cfc.Operator(role)}
	for _, m := range contextItems(history) {
		g.observe(m.source, m.text)
	}
	// The trace continues from the journal's (chained) decisions, not
	// from a policy-trace.json that may have been edited since.
	if r.resumed != nil {
		for _, d := range r.resumed.Decisions {
			g.trace.Decisions = append(g.trace.Decisions, d)
			g.trace.Totals[d.Decision.Decision]++
		}
	}
	return g
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
		case m.Role == loop.RoleUser && strings.HasPrefix(m.Content, attachmentMarker):
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
func (g *policyGate) observe(source, text string) {
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

func (g *policyGate) Before(ctx context.Context, turn int, call loop.ToolCall, effect loop.Effect) (*loop.ToolResult, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	p := g.policy
	if g.r.opts.HonorAllowedTools {
		p.Narrowing = g.r.narrowing()
	}
	if strings.Contains(call.Name, tools.MCPSeparator) && tools.MCPAllowed(g.r.opts.AllowTools, call.Name) {
		// An MCP tool allowed by its server's KEY__* is allowed by name:
		// the operator allowed every tool that server lists.
		p.AllowedTools = append(slices.Clone(p.AllowedTools), call.Name)
	}
	d := cfc.Decide(p, cfc.Call{
		Tool: call.Name, Effect: cfc.Effect(effect), Args: stringArgs(call.Arguments),
		Context: cfc.JoinAll(g.labels...), Operator: g.r.opts.Prompt, Untrusted: g.untrusted,
	})
	g.trace.Decisions = append(g.trace.Decisions, record.TraceRecord{Turn: turn, CallID: call.ID, At: g.r.now().UTC(), SnapshotDigest: g.snapshot.Digest, Decision: d})
	g.trace.Totals[d.Decision]++
	// Deferred: the engine makes it durable before a call that acts on
	// the world; a denial or a read has nothing to protect.
	if _, err := g.r.journal.AppendDeferred(record.EventPolicyDecision, record.PolicyDecision{Turn: turn, CallID: call.ID, SnapshotDigest: g.snapshot.Digest, Decision: d}); err != nil {
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
	g.r.progress("policy denied %s: %s", call.Name, d.Detail)
	return &res, g.r.opts.FailOnDenial
}

func (g *policyGate) After(call loop.ToolCall, effect loop.Effect, res loop.ToolResult) loop.ToolResult {
	g.mu.Lock()
	defer g.mu.Unlock()
	if ex, ok := res.Record.(*record.ScriptExecution); ok && ex.ExecutionTarget == "host" &&
		cfc.WithholdUnmediated(g.policy.Mode, false, g.r.opts.AllowUnmediated) {
		b, _ := json.Marshal(map[string]any{"type": "harness.output-withheld", "handle": call.ID, "reason": "unmediated_execution",
			"detail":   "the script ran outside harness's sandbox (--sandbox none); its output is withheld in enforce modes (--cfc-allow-unmediated shows it)",
			"exitCode": ex.ExitCode})
		res.Content = string(b)
		g.r.event(record.EventOutputWithheld, map[string]string{"callId": call.ID, "tool": call.Name, "reason": "unmediated_execution"})
	}
	// harness knows the key: whatever a tool returns (a script run with
	// --sandbox none that read it, a file that holds it), the model and
	// the tool-output record never see it.
	res.Content = g.r.redact.String(res.Content)
	g.observe("tool:"+call.Name, res.Content)
	// The scan reads decoded text: in the JSON encoding a second line
	// follows a literal \n, where no rule anchored on a word boundary
	// would ever match.
	var fs []cfc.Finding
	for _, t := range decodedTexts(res.Content) {
		fs = append(fs, cfc.Scan(t)...)
	}
	if len(fs) > 0 {
		g.r.event(record.EventContentFlagged, map[string]any{"callId": call.ID, "tool": call.Name, "findings": fs})
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

// narrowing is the union of the allowed-tools of the active skills, or
// nil when none declares any: a skill can narrow the tools, never add.
func (r *runner) narrowing() []string {
	if r.registry == nil {
		return nil
	}
	var out []string
	declared := false
	for _, a := range r.acts.List() {
		s, ok := r.registry.Lookup(a.Name)
		if !ok {
			continue
		}
		switch v := s.Frontmatter["allowed-tools"].(type) {
		case string:
			declared = true
			out = append(out, strings.FieldsFunc(v, func(c rune) bool { return c == ' ' || c == ',' })...)
		case []any:
			declared = true
			for _, e := range v {
				if s, ok := e.(string); ok {
					out = append(out, s)
				}
			}
		}
	}
	if !declared {
		return nil
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// writePolicySnapshot records the policy in force, with its digest.
func (r *runner) writePolicySnapshot() error {
	ps := record.PolicySnapshot{
		Envelope: artifacts.NewEnvelope(record.TypePolicySnapshot, record.Version), Mode: r.opts.CFCMode, ModeSource: sourceOf(r.opts.Sources, "cfc-mode"),
		Absence:    "a tool the operator did not allow is never offered; a call the policy does not allow is denied and the model told why",
		PromptRole: r.opts.PromptRole, PromptRoleSource: sourceOf(r.opts.Sources, "prompt-role"), PromptDigest: artifacts.DigestString(r.opts.Prompt),
		AllowedTools: nonNil(r.opts.AllowTools), ScriptAllowlist: nonNil(r.opts.AllowSkillScripts), SkillsRoots: nonNil(r.res.skillsRoots), ExternalRoots: r.res.externalRoots,
		LoadedSkills: []record.PolicySkill{}, TrustDiagnostics: r.findings, TrustedSkills: nonNil(r.opts.TrustSkills),
		AllowNetwork: nonNil(r.opts.AllowNetwork),
		Sandbox:      r.manifest.Inputs.Sandbox, FailOnDenial: r.opts.FailOnDenial, AllowUnmediated: r.opts.AllowUnmediated, HonorAllowedTools: r.opts.HonorAllowedTools,
	}
	if ps.TrustDiagnostics == nil {
		ps.TrustDiagnostics = []record.Finding{}
	}
	for _, a := range r.acts.List() {
		p := record.PolicySkill{Name: a.Name, Digest: a.Digest, Source: a.Source}
		p.Tier = skills.RiskUndeclared
		if s, ok := r.registry.Lookup(a.Name); ok {
			var err error
			p.Permissions, err = skills.PermissionsOf(s.Frontmatter)
			p.Tier, p.Destructive = skills.RiskOf(p.Permissions, nil), skills.Destructive(s.Frontmatter)
			if err != nil {
				p.Tier = skills.RiskCritical
			}
		}
		ps.LoadedSkills = append(ps.LoadedSkills, p)
	}
	if mcpWanted(r.opts) || r.opts.MCPConfig != "" {
		ps.MCP = &record.PolicyMCP{ConfigFile: absOrEmpty(r.opts.MCPConfig), ConfigDigest: r.opts.operator.recordedDigest(),
			PassEnv: nonNil(r.opts.PassEnv), ToolEffects: nonNil(r.opts.MCPToolEffects)}
	}
	b, err := json.Marshal(ps)
	if err != nil {
		return err
	}
	ps.Digest = artifacts.DigestBytes(b)
	if r.gate != nil {
		r.gate.snapshot = ps
	}
	return r.redact.WriteJSON(r.path(record.FilePolicySnapshot), &ps)
}

func sourceOf(m map[string]string, k string) string {
	if s, ok := m[k]; ok {
		return s
	}
	return "default"
}

func (g *policyGate) writeTrace() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.r.redact.WriteJSON(g.r.path(record.FilePolicyTrace), &g.trace)
}
