package run

import (
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/cfc"
	"github.com/harness-dev/harness/gate"
	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/runopts"
	"github.com/harness-dev/harness/skills"
)

// newGate is the run's policy gate over the conversation the loop starts
// from (see gate.New).
func (r *runner) newGate(history []loop.Message) *gate.Gate {
	mode, _ := cfc.ParseMode(r.opts.CFCMode)
	role, _ := cfc.ParseRole(r.opts.PromptRole)
	cfg := gate.Config{
		Policy:   cfc.Policy{Mode: mode, PromptRole: role, AllowedTools: nonNil(r.opts.AllowTools)},
		Operator: r.operatorText(), OperatorValues: r.opts.OperatorValues(), AllowTools: r.opts.AllowTools,
		AllowUnmediated: r.opts.AllowUnmediated, FailOnDenial: r.opts.FailOnDenial,
		Host: gateHost{r},
	}
	if r.opts.HonorAllowedTools {
		cfg.Narrowing = r.narrowing
	}
	if r.resumed != nil {
		cfg.Resumed = r.resumed.Decisions
	}
	return gate.New(cfg, history)
}

// operatorText is everything the operator said: the task and each
// follow-up instruction.
func (r *runner) operatorText() string {
	if r.resumed == nil || len(r.resumed.FollowUps) == 0 {
		return r.opts.Prompt
	}
	return r.opts.Prompt + "\n" + strings.Join(r.resumed.FollowUps, "\n")
}

// gateHost is the run as its gate sees it.
type gateHost struct{ r *runner }

func (h gateHost) RecordDecision(d record.PolicyDecision) error {
	_, err := h.r.journal.AppendDeferred(record.EventPolicyDecision, d)
	return err
}
func (h gateHost) Event(typ string, data any)          { h.r.event(typ, data) }
func (h gateHost) Progress(format string, args ...any) { h.r.progress(format, args...) }
func (h gateHost) Redact(s string) string              { return h.r.redact.String(s) }
func (h gateHost) Now() time.Time                      { return h.r.now() }

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
		AllowNetwork: nonNil(r.opts.AllowNetwork), Tiers: r.opts.Tiers,
		Sandbox: r.manifest.Inputs.Sandbox, FailOnDenial: r.opts.FailOnDenial, AllowUnmediated: r.opts.AllowUnmediated, HonorAllowedTools: r.opts.HonorAllowedTools,
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
	if r.opts.MCPWanted() || r.opts.MCPConfig != "" {
		ps.MCP = &record.PolicyMCP{ConfigFile: runopts.Abs(r.opts.MCPConfig), ConfigDigest: r.opts.MCPFileDigest(),
			PassEnv: nonNil(r.opts.PassEnv), ToolEffects: nonNil(r.opts.MCPToolEffects)}
	}
	b, err := json.Marshal(ps)
	if err != nil {
		return err
	}
	ps.Digest = artifacts.DigestBytes(b)
	r.policyDigest = ps.Digest
	if r.gate != nil {
		r.gate.SetSnapshot(ps)
	}
	return r.redact.WriteJSON(r.path(record.FilePolicySnapshot), &ps)
}

func sourceOf(m map[string]string, k string) string {
	if s, ok := m[k]; ok {
		return s
	}
	return "default"
}

// writeTrace writes every decision the gate made, policy-trace.json.
func (r *runner) writeTrace() error {
	t := r.gate.Trace()
	return r.redact.WriteJSON(r.path(record.FilePolicyTrace), &t)
}
