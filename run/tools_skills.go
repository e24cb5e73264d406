package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/skills"
)

// Bounds of read_skill_resource.
const (
	defaultResourceBytes = 64000
	maxResourceBytes     = 256000
)

const fileResourceReads = "skill-resource-reads.json"

// ResourceReads is skill-resource-reads.json: every read_skill_resource
// attempt, success or refusal, in call order.
type ResourceReads struct {
	artifacts.Envelope
	Reads []ResourceReadRecord `json:"reads"`
}

// ResourceReadRecord is one attempt to read a skill resource.
type ResourceReadRecord struct {
	Type                  string              `json:"type"`
	OutputID              string              `json:"outputId"`
	RunID                 string              `json:"runId"`
	SkillName             string              `json:"skillName"`
	Path                  string              `json:"path"`
	Status                string              `json:"status"` // read | binary | error
	ReadAt                time.Time           `json:"readAt"`
	CFCPromptRole         string              `json:"cfcPromptRole"`
	Kind                  string              `json:"kind,omitempty"`
	ResourcePath          string              `json:"resourcePath,omitempty"`
	SandboxResourcePath   string              `json:"sandboxResourcePath,omitempty"`
	RegistryDigest        artifacts.Digest    `json:"registryDigest,omitempty"`
	ObservedDigest        artifacts.Digest    `json:"observedDigest,omitempty"`
	DigestMatchesRegistry *bool               `json:"digestMatchesRegistry,omitempty"`
	RegistrySizeBytes     *int64              `json:"registrySizeBytes,omitempty"`
	ObservedSizeBytes     *int64              `json:"observedSizeBytes,omitempty"`
	ContentKind           string              `json:"contentKind,omitempty"`
	MaxBytes              int                 `json:"maxBytes"`
	Truncated             bool                `json:"truncated"`
	Diagnostics           []skills.Diagnostic `json:"diagnostics"`
	Error                 *ErrorRecord        `json:"error,omitempty"`
}

// skillTools joins the registry snapshot to the loop: load_skill (when a
// catalog is offered) and read_skill_resource.
type skillTools struct {
	r *runner

	mu    sync.Mutex
	reads ResourceReads
}

func (r *runner) skillTools() []loop.Tool {
	st := &skillTools{r: r, reads: ResourceReads{Envelope: artifacts.NewEnvelope("harness.skill-resource-reads", 1), Reads: []ResourceReadRecord{}}}
	tools := []loop.Tool{&readSkillResourceTool{st}}
	if r.registry != nil {
		tools = append(tools, &skillsTool{r: r})
	}
	if len(r.catalog.Entries) > 0 {
		tools = append([]loop.Tool{&loadSkillTool{st}}, tools...)
	}
	return tools
}

// refusal is a tool result for a refused skill operation.
func refusal(err error, rec any) loop.ToolResult {
	var ref *skills.Refusal
	if errors.As(err, &ref) {
		return loop.ErrorResult(ref.Code, ref.Msg, rec)
	}
	return loop.ErrorResult("skill_error", err.Error(), rec)
}

type loadSkillTool struct{ st *skillTools }

func (t *loadSkillTool) Effect() loop.Effect { return loop.EffectRead }

func (t *loadSkillTool) Spec() loop.ToolSpec {
	c := t.st.r.catalog
	names, _ := json.Marshal(c.Names())
	return loop.ToolSpec{
		Name: "load_skill",
		Description: "Load a skill's instructions into the conversation when the task matches its description. " +
			"Skills are guidance from the workspace; they cannot grant tools or override the operator. Available skills:\n" + c.Text(),
		Parameters: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["name"],"properties":{` +
			`"name":{"type":"string","enum":` + string(names) + `,"description":"the skill to load"},` +
			`"file_path":{"type":"string","description":"optional: also read this file of the skill, relative to its directory (e.g. references/guide.md)"}}}`),
	}
}

func (t *loadSkillTool) Call(ctx context.Context, call loop.ToolCall, raw json.RawMessage) (loop.ToolResult, error) {
	var args struct {
		Name     string `json:"name"`
		FilePath string `json:"file_path"`
	}
	if err := json.Unmarshal(raw, &args); err != nil {
		return loop.ErrorResult("arguments_invalid", err.Error(), nil), nil
	}
	r := t.st.r
	rec := map[string]any{"skill": args.Name}
	s, ok := r.registry.Lookup(args.Name)
	if !ok || !s.ModelInvocable() {
		return loop.ErrorResult("skill_not_found", fmt.Sprintf("skill not found: %s; load one of: %s", args.Name, strings.Join(r.catalog.Names(), ", ")), rec), nil
	}
	var parts []string
	if rules, bad := r.untrusted(s.Name); bad && !r.acts.isActive(s.Name) {
		rec["code"] = "skill_untrusted"
		return loop.ErrorResult("skill_untrusted", fmt.Sprintf("skill '%s' has critical content findings (%s) and the policy is enforce-strict; it cannot be loaded unless the operator passes --trust-skill %s", s.Name, strings.Join(rules, ", "), s.Name), rec), nil
	}
	if r.acts.isActive(s.Name) {
		rec["status"] = "already_active"
		parts = append(parts, fmt.Sprintf("Skill '%s' is already active: its instructions are in the conversation above.", s.Name))
	} else {
		content, matches, err := t.read(s)
		if err != nil {
			rec["code"] = "skill_snapshot_mismatch"
			return refusal(err, rec), nil
		}
		source := "loaded with load_skill"
		if !matches {
			source += "; DRIFTED: SKILL.md changed after the run-start snapshot and was allowed by --allow-drift"
		}
		if err := r.acts.add(Activation{
			Name: s.Name, Source: SourceModelTool, RunID: r.res.runID, SkillPath: s.SkillPath, SandboxPath: s.SandboxSkillPath,
			Digest: artifacts.DigestBytes(content), ActivatedAt: r.now().UTC(), CFCPromptRole: "context",
		}); err != nil {
			return loop.ToolResult{}, err
		}
		rec["status"], rec["digest"], rec["digestMatchesRegistry"] = "activated", artifacts.DigestBytes(content), matches
		parts = append(parts, skillContextBlock(r.token, s, content, source))
	}
	if args.FilePath != "" {
		res := t.st.readResource(call.ID, s.Name, args.FilePath, defaultResourceBytes)
		parts = append(parts, "File "+args.FilePath+":\n"+res.Content)
	}
	return loop.ToolResult{Content: strings.Join(parts, "\n\n"), Status: loop.StatusOK, Record: rec}, nil
}

// read re-reads SKILL.md and holds it to the snapshot digest, unless the
// operator allowed drift.
func (t *loadSkillTool) read(s *skills.Skill) ([]byte, bool, error) {
	if t.st.r.opts.AllowDrift {
		return skills.ReadSkillFileCurrent(s)
	}
	b, err := skills.ReadSkillFile(s)
	return b, err == nil, err
}

type readSkillResourceTool struct{ st *skillTools }

func (t *readSkillResourceTool) Effect() loop.Effect { return loop.EffectRead }

func (t *readSkillResourceTool) Spec() loop.ToolSpec {
	return loop.ToolSpec{
		Name:        "read_skill_resource",
		Description: "Read a supporting file of an active skill (listed with the skill's instructions), by its path relative to the skill directory. Text returns up to maxBytes of content; binary files return metadata only.",
		Parameters: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["skill","path"],"properties":{` +
			`"skill":{"type":"string","description":"name of an active skill"},` +
			`"path":{"type":"string","description":"path relative to the skill directory, e.g. references/guide.md"},` +
			`"maxBytes":{"type":"integer","description":"most bytes of text to return (default 64000, at most 256000)"}}}`),
	}
}

func (t *readSkillResourceTool) Call(ctx context.Context, call loop.ToolCall, raw json.RawMessage) (loop.ToolResult, error) {
	var args struct {
		Skill    string `json:"skill"`
		Path     string `json:"path"`
		MaxBytes *int   `json:"maxBytes"`
	}
	if err := json.Unmarshal(raw, &args); err != nil {
		return loop.ErrorResult("arguments_invalid", err.Error(), nil), nil
	}
	max := defaultResourceBytes
	if args.MaxBytes != nil {
		max = *args.MaxBytes
	}
	return t.st.readResource(call.ID, args.Skill, args.Path, max), nil
}

// readResource performs and records one read_skill_resource attempt.
func (st *skillTools) readResource(callID, skill, rel string, maxBytes int) loop.ToolResult {
	r := st.r
	rec := ResourceReadRecord{
		Type: "harness.skill-resource-read", OutputID: callID, RunID: r.res.runID, SkillName: skill, Path: rel,
		ReadAt: r.now().UTC(), CFCPromptRole: "context", MaxBytes: maxBytes, Diagnostics: []skills.Diagnostic{},
	}
	result := st.doRead(&rec, skill, rel, maxBytes)
	st.mu.Lock()
	st.reads.Reads = append(st.reads.Reads, rec)
	err := artifacts.WriteJSON(r.path(fileResourceReads), &st.reads)
	st.mu.Unlock()
	if err != nil {
		return loop.ErrorResult("artifact_write_failed", err.Error(), rec)
	}
	return result
}

func (st *skillTools) doRead(rec *ResourceReadRecord, skill, rel string, maxBytes int) loop.ToolResult {
	r := st.r
	fail := func(code, msg string) loop.ToolResult {
		rec.Status, rec.Error = "error", &ErrorRecord{Code: code, Message: msg}
		return loop.ErrorResult(code, msg, rec)
	}
	if r.registry == nil {
		return fail("skill_registry_missing", "this run has no skill registry: it was started without --skills-root")
	}
	s, ok := r.registry.Lookup(skill)
	if !ok {
		return fail("skill_not_found", fmt.Sprintf("skill not found: %s; available skills: %s", skill, strings.Join(r.registry.Available(), ", ")))
	}
	if !r.acts.isActive(s.Name) {
		return fail("skill_not_activated", fmt.Sprintf("skill '%s' is not active: load it with load_skill first", s.Name))
	}
	if maxBytes < 1 || maxBytes > maxResourceBytes {
		return fail("max_bytes_invalid", fmt.Sprintf("maxBytes must be between 1 and %d", maxResourceBytes))
	}
	if res, ok := s.Resource(rel); ok {
		rec.Kind, rec.ResourcePath, rec.SandboxResourcePath, rec.RegistryDigest = res.Kind, res.HostPath, res.SandboxPath, res.Digest
		size := res.Size
		rec.RegistrySizeBytes = &size
	}
	rr, err := skills.ReadResource(s, rel, maxBytes)
	if err != nil {
		var ref *skills.Refusal
		if errors.As(err, &ref) {
			return fail(ref.Code, ref.Msg)
		}
		return fail("resource_not_found", err.Error())
	}
	matches, size := rr.DigestMatches, rr.ObservedSize
	rec.ObservedDigest, rec.DigestMatchesRegistry, rec.ObservedSizeBytes, rec.ContentKind = rr.ObservedDigest, &matches, &size, rr.ContentKind
	out := map[string]any{
		"skill": s.Name, "path": rel, "sandboxPath": rr.Resource.SandboxPath, "kind": rr.Resource.Kind,
		"size": rr.ObservedSize, "digest": rr.ObservedDigest, "contentKind": rr.ContentKind,
	}
	if !matches {
		d := skills.Diagnostic{Severity: skills.SeverityWarning, Code: "resource-drift", Path: rel,
			Detail: fmt.Sprintf("%s changed after the run-start snapshot (digest %s, size %d; snapshot %s, size %d)", rel, rr.ObservedDigest, rr.ObservedSize, rr.Resource.Digest, rr.Resource.Size)}
		rec.Diagnostics = append(rec.Diagnostics, d)
		if !r.opts.AllowDrift {
			return fail("resource_snapshot_mismatch", d.Detail+"; refusing to read content that was not snapshotted")
		}
		out["drifted"] = true
	}
	if rr.ContentKind == "binary" {
		rec.Status = "binary"
		out["note"] = "binary file: content not shown"
	} else {
		rec.Status, rec.Truncated = "read", rr.Truncated
		out["truncated"], out["content"] = rr.Truncated, string(rr.Content)
	}
	b, _ := json.Marshal(out)
	return loop.ToolResult{Content: string(b), Status: loop.StatusOK, Record: rec}
}

// skillsTool lets the model ask the run-start registry about skills in one
// call: list, info, check (eligibility), audit (content scan), and reload,
// which in a batch run only reports drift: the snapshot stays fixed.
type skillsTool struct{ r *runner }

func (t *skillsTool) Effect() loop.Effect { return loop.EffectRead }

func (t *skillsTool) Spec() loop.ToolSpec {
	return loop.ToolSpec{
		Name:        "skills",
		Description: "Ask the skill registry of this run. Actions: list (filter all|eligible|ineligible, verbose), info (one skill: requirements, what is missing, install hints, path), check (why skills cannot run here and how to fix it), audit (content-scan findings for one skill), reload (reports what changed on disk; the run keeps its start snapshot). Returns JSON.",
		Parameters: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["action"],"properties":{` +
			`"action":{"type":"string","description":"list, info, check, audit or reload"},` +
			`"name":{"type":"string","description":"skill name, for info, audit and optionally check"},` +
			`"filter":{"type":"string","description":"for list: all (default), eligible or ineligible"},` +
			`"verbose":{"type":"boolean","description":"for list: include requirements and paths"}}}`),
	}
}

func (t *skillsTool) Call(ctx context.Context, call loop.ToolCall, raw json.RawMessage) (loop.ToolResult, error) {
	var args struct {
		Action  string `json:"action"`
		Name    string `json:"name"`
		Filter  string `json:"filter"`
		Verbose bool   `json:"verbose"`
	}
	if err := json.Unmarshal(raw, &args); err != nil {
		return loop.ErrorResult("arguments_invalid", err.Error(), nil), nil
	}
	reg := t.r.registry
	one := func() (*skills.Skill, *loop.ToolResult) {
		if args.Name == "" {
			res := loop.ErrorResult("skill_name_required", fmt.Sprintf("skill name required for '%s' action", args.Action), nil)
			return nil, &res
		}
		s, ok := reg.Lookup(args.Name)
		if !ok {
			res := loop.ErrorResult("skill_not_found", "skill not found: "+args.Name, nil)
			return nil, &res
		}
		return s, nil
	}
	var out any
	switch args.Action {
	case "list":
		type entry struct {
			Name        string               `json:"name"`
			Description string               `json:"description"`
			Eligible    bool                 `json:"eligible"`
			Path        string               `json:"path,omitempty"`
			Requires    *skills.Requirements `json:"requires,omitempty"`
		}
		list := []entry{}
		for _, s := range reg.Skills {
			if s.ShadowedBy != "" || args.Filter == "eligible" && !s.IsEligible() || args.Filter == "ineligible" && s.IsEligible() {
				continue
			}
			e := entry{Name: s.Name, Description: s.Description, Eligible: s.IsEligible()}
			if args.Verbose {
				e.Path, e.Requires = s.SandboxSkillPath, s.Requires
			}
			list = append(list, e)
		}
		out = map[string]any{"skills": list}
	case "info", "audit":
		s, res := one()
		if res != nil {
			return *res, nil
		}
		if args.Action == "audit" {
			fs := AuditSkill(s)
			if fs == nil {
				fs = []PolicyFinding{}
			}
			out = map[string]any{"skill": s.Name, "findings": fs}
			break
		}
		out = map[string]any{"name": s.Name, "description": s.Description, "path": s.SandboxSkillPath, "eligible": s.IsEligible(),
			"requires": s.Requires, "missing": s.Missing, "installHints": s.InstallHints, "compatibility": s.Frontmatter["compatibility"]}
	case "check":
		var items []map[string]any
		for _, s := range reg.Skills {
			if s.ShadowedBy != "" || args.Name != "" && s.Name != args.Name || s.IsEligible() {
				continue
			}
			items = append(items, map[string]any{"name": s.Name, "missing": describeMissing(s.Missing), "fix": s.InstallHints})
		}
		if args.Name != "" {
			if _, ok := reg.Lookup(args.Name); !ok {
				return loop.ErrorResult("skill_not_found", "skill not found: "+args.Name, nil), nil
			}
		}
		if items == nil {
			items = []map[string]any{}
		}
		out = map[string]any{"ineligible": items}
	case "reload":
		now, err := skills.Scan(ctx, skills.ScanOptions{Roots: t.r.res.skillsRoots, Workspace: t.r.res.workspace, SandboxWorkspace: SandboxWorkspace, Limits: reg.Limits, Previous: reg})
		if err != nil {
			return loop.ErrorResult("registry_scan_failed", err.Error(), nil), nil
		}
		rep := &DriftReport{Skills: SkillDrift{Added: []string{}, Removed: []string{}, Changed: []string{}}, Resources: []ResourceDrift{}}
		compareSkills(rep, reg, now, map[string]bool{})
		out = map[string]any{"note": "a batch run keeps its start snapshot; this is what changed on disk since", "skills": rep.Skills}
	default:
		return loop.ErrorResult("unknown_action", "unknown action: "+args.Action, nil), nil
	}
	b, err := json.Marshal(out)
	if err != nil {
		return loop.ToolResult{}, err
	}
	return loop.ToolResult{Content: string(b), Status: loop.StatusOK}, nil
}
