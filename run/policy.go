package run

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/cfc"
	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/skills"
)

const (
	filePolicySnapshot = "policy-snapshot.json"
	filePolicyTrace    = "policy-trace.json"
	// maxUntrustedText bounds what the argument provenance check keeps of
	// untrusted context; older text falls off first.
	maxUntrustedText = 4 << 20
)

// PolicySnapshot is policy-snapshot.json: the policy the run enforced.
type PolicySnapshot struct {
	artifacts.Envelope
	Digest            artifacts.Digest `json:"digest"`
	Mode              string           `json:"mode"`
	ModeSource        string           `json:"modeSource"`
	Absence           string           `json:"absence"`
	PromptRole        string           `json:"promptRole"`
	PromptRoleSource  string           `json:"promptRoleSource"`
	PromptDigest      artifacts.Digest `json:"promptDigest"`
	AllowedTools      []string         `json:"allowedTools"`
	ScriptAllowlist   []string         `json:"scriptAllowlist"`
	SkillsRoots       []string         `json:"skillsRoots"`
	LoadedSkills      []PolicySkill    `json:"loadedSkills"`
	TrustDiagnostics  []PolicyFinding  `json:"trustDiagnostics"`
	TrustedSkills     []string         `json:"trustedSkills"`
	Sandbox           *SandboxRecord   `json:"sandbox,omitempty"`
	FailOnDenial      bool             `json:"failOnDenial"`
	AllowUnmediated   bool             `json:"allowUnmediated"`
	HonorAllowedTools bool             `json:"honorAllowedTools"`
}

// PolicySkill is a skill in the model's context.
type PolicySkill struct {
	Name   string           `json:"name"`
	Digest artifacts.Digest `json:"digest"`
	Source string           `json:"source"`
}

// PolicyFinding is a content-scan finding that bears on trust.
type PolicyFinding struct {
	Skill string `json:"skill"`
	Path  string `json:"path"`
	cfc.Finding
}

// PolicyTrace is policy-trace.json: one record per decision.
type PolicyTrace struct {
	artifacts.Envelope
	Decisions []TraceRecord  `json:"decisions"`
	Totals    map[string]int `json:"totals"`
}

// TraceRecord is one decision, tied to its call and the policy snapshot.
type TraceRecord struct {
	Turn           int              `json:"turn"`
	CallID         string           `json:"callId"`
	At             time.Time        `json:"at"`
	SnapshotDigest artifacts.Digest `json:"snapshotDigest"`
	cfc.Decision
}

// policyGate is the loop's Gate: it labels the context, asks cfc for a
// decision on every call, withholds unmediated output and scans what the
// model is about to read.
type policyGate struct {
	r      *runner
	policy cfc.Policy

	mu        sync.Mutex
	labels    []cfc.Label
	untrusted []string
	size      int
	trace     PolicyTrace
	snapshot  PolicySnapshot
}

func (r *runner) newGate(preloaded map[string]string) *policyGate {
	mode, _ := cfc.ParseMode(r.opts.CFCMode)
	role, _ := cfc.ParseRole(r.opts.PromptRole)
	g := &policyGate{r: r, policy: cfc.Policy{Mode: mode, PromptRole: role, AllowedTools: nonNil(r.opts.AllowTools)},
		trace: PolicyTrace{Envelope: artifacts.NewEnvelope("harness.policy-trace", 1), Decisions: []TraceRecord{}, Totals: map[string]int{cfc.Allow: 0, cfc.Deny: 0, cfc.Warn: 0}}}
	g.labels = []cfc.Label{{Role: cfc.RoleDirectCommand, Integrity: cfc.Trusted, Sources: []string{"harness"}}, cfc.Operator(role)}
	for _, name := range sortedNames(preloaded) {
		g.observe("skill:"+name, preloaded[name])
	}
	// A resumed run continues the trace it started.
	var prev PolicyTrace
	if err := artifacts.ReadJSON(r.path(filePolicyTrace), "harness.policy-trace", 1, &prev); err == nil {
		g.trace.Decisions = append(prev.Decisions, g.trace.Decisions...)
		for k, v := range prev.Totals {
			g.trace.Totals[k] += v
		}
	}
	return g
}

func sortedNames(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// observe adds an untrusted item to the context.
func (g *policyGate) observe(source, text string) {
	g.labels = append(g.labels, cfc.Observed(source))
	g.untrusted = append(g.untrusted, text)
	g.size += len(text)
	for g.size > maxUntrustedText && len(g.untrusted) > 1 {
		g.size -= len(g.untrusted[0])
		g.untrusted = g.untrusted[1:]
	}
}

func (g *policyGate) Before(ctx context.Context, turn int, call loop.ToolCall, effect loop.Effect) (*loop.ToolResult, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	p := g.policy
	if g.r.opts.HonorAllowedTools {
		p.Narrowing = g.r.narrowing()
	}
	d := cfc.Decide(p, cfc.Call{
		Tool: call.Name, Effect: cfc.Effect(effect), Args: stringArgs(call.Arguments),
		Context: cfc.JoinAll(g.labels...), Operator: g.r.opts.Prompt, Untrusted: g.untrusted,
	})
	g.trace.Decisions = append(g.trace.Decisions, TraceRecord{Turn: turn, CallID: call.ID, At: g.r.now().UTC(), SnapshotDigest: g.snapshot.Digest, Decision: d})
	g.trace.Totals[d.Decision]++
	g.r.journal.Append("policy.decision", struct {
		Turn   int    `json:"turn"`
		CallID string `json:"callId"`
		cfc.Decision
	}{turn, call.ID, d})
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
	if ex, ok := res.Record.(*ScriptExecution); ok && ex.ExecutionTarget == "host" &&
		cfc.WithholdUnmediated(g.policy.Mode, false, g.r.opts.AllowUnmediated) {
		b, _ := json.Marshal(map[string]any{"type": "harness.output-withheld", "handle": call.ID, "reason": "unmediated_execution",
			"detail":   "the script ran outside harness's sandbox (--sandbox none); its output is withheld in enforce modes (--cfc-allow-unmediated shows it)",
			"exitCode": ex.ExitCode})
		res.Content = string(b)
		g.r.journal.Append("output.withheld", map[string]string{"callId": call.ID, "tool": call.Name, "reason": "unmediated_execution"})
	}
	source := "tool:" + call.Name
	g.observe(source, res.Content)
	if fs := cfc.Scan(res.Content); len(fs) > 0 {
		g.r.journal.Append("content.flagged", map[string]any{"callId": call.ID, "tool": call.Name, "findings": fs})
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
			for _, k := range sortedKeys(t) {
				walk(t[k])
			}
		}
	}
	walk(v)
	return out
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// narrowing is the union of the allowed-tools of the active skills, or
// nil when none declares any: a skill can narrow the tools, never add.
func (r *runner) narrowing() []string {
	if r.registry == nil || r.acts == nil {
		return nil
	}
	var out []string
	declared := false
	for _, a := range r.acts.rec.Activations {
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

// scanSkills applies the content-scan rule catalog to every effective
// skill: findings become registry diagnostics, and critical ones are
// remembered for the enforce-strict activation check.
func (r *runner) scanSkills(reg *skills.Registry) {
	r.critical = map[string][]string{}
	for i := range reg.Skills {
		s := &reg.Skills[i]
		if s.ShadowedBy != "" {
			continue
		}
		for _, f := range AuditSkill(s) {
			sev := skills.SeverityWarning
			if f.Severity == cfc.SeverityCritical {
				sev = skills.SeverityError
				r.critical[s.Name] = append(r.critical[s.Name], f.Rule)
			}
			detail := fmt.Sprintf("%s finding: %s", f.Severity, f.Match)
			if f.Hidden != "" {
				detail += "; hidden text: " + f.Hidden
			}
			s.Diagnostics = append(s.Diagnostics, skills.Diagnostic{Severity: sev, Code: f.Rule, Detail: detail, Path: f.Path, Line: f.Line})
			r.findings = append(r.findings, f)
		}
	}
}

// AuditSkill applies the content-scan rule catalog to a skill's SKILL.md
// and its text scripts and references (64 KiB each at most), and flags
// bundled executables.
func AuditSkill(s *skills.Skill) []PolicyFinding {
	var out []PolicyFinding
	scan := func(path, text string) {
		for _, f := range cfc.Scan(text) {
			out = append(out, PolicyFinding{Skill: s.Name, Path: path, Finding: f})
		}
	}
	if b, err := os.ReadFile(s.SkillPath); err == nil && len(b) <= 1<<20 {
		scan(s.SkillPath, string(b))
	}
	for _, res := range s.Resources {
		if res.ContentKind == "binary" {
			if head := readHead(res.HostPath); len(head) > 0 {
				if f, ok := cfc.ExecutableFinding(head); ok {
					f.Match = "a binary executable is bundled with the skill"
					out = append(out, PolicyFinding{Skill: s.Name, Path: res.HostPath, Finding: f})
				}
			}
			continue
		}
		if res.Size > 64<<10 || (res.Kind != skills.KindScript && res.Kind != skills.KindReference) {
			continue
		}
		if b, err := os.ReadFile(res.HostPath); err == nil {
			scan(res.HostPath, string(b))
		}
	}
	return out
}

func readHead(p string) []byte {
	f, err := os.Open(p)
	if err != nil {
		return nil
	}
	defer f.Close()
	b := make([]byte, 4)
	n, _ := f.Read(b)
	return b[:n]
}

// untrusted reports whether enforce-strict forbids activating a skill
// with a critical content finding the operator did not vouch for.
func (r *runner) untrusted(name string) ([]string, bool) {
	if r.opts.CFCMode != string(cfc.ModeEnforceStrict) || slices.Contains(r.opts.TrustSkills, name) {
		return nil, false
	}
	rules := r.critical[name]
	return rules, len(rules) > 0
}

// writePolicySnapshot records the policy in force, with its digest.
func (r *runner) writePolicySnapshot(g *policyGate) error {
	ps := PolicySnapshot{
		Envelope: artifacts.NewEnvelope("harness.policy-snapshot", 1), Mode: r.opts.CFCMode, ModeSource: sourceOf(r.opts.Sources, "cfc-mode"),
		Absence:    "a tool the operator did not allow is never offered; a call the policy does not allow is denied and the model told why",
		PromptRole: r.opts.PromptRole, PromptRoleSource: sourceOf(r.opts.Sources, "prompt-role"), PromptDigest: artifacts.DigestString(r.opts.Prompt),
		AllowedTools: nonNil(r.opts.AllowTools), ScriptAllowlist: nonNil(r.opts.AllowSkillScripts), SkillsRoots: nonNil(r.res.skillsRoots),
		LoadedSkills: []PolicySkill{}, TrustDiagnostics: r.findings, TrustedSkills: nonNil(r.opts.TrustSkills),
		Sandbox: r.manifest.Inputs.Sandbox, FailOnDenial: r.opts.FailOnDenial, AllowUnmediated: r.opts.AllowUnmediated, HonorAllowedTools: r.opts.HonorAllowedTools,
	}
	if ps.TrustDiagnostics == nil {
		ps.TrustDiagnostics = []PolicyFinding{}
	}
	if r.acts != nil {
		for _, a := range r.acts.rec.Activations {
			ps.LoadedSkills = append(ps.LoadedSkills, PolicySkill{Name: a.Name, Digest: a.Digest, Source: a.Source})
		}
	}
	b, err := json.Marshal(ps)
	if err != nil {
		return err
	}
	ps.Digest = artifacts.DigestBytes(b)
	if g != nil {
		g.snapshot = ps
	}
	return artifacts.WriteJSON(r.path(filePolicySnapshot), &ps)
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
	return artifacts.WriteJSON(g.r.path(filePolicyTrace), &g.trace)
}
