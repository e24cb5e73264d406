package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/goccy/go-yaml"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/loop"
)

const (
	dirChildren       = "children"
	maxSummaryChars   = 4000
	SourceSubagent    = "subagent-profile"
	delegateToolName  = "delegate_task"
	readOnlyToolNames = "list_files load_skill read_file read_skill_resource skills"
)

// Profile is a subagent profile: what a child run may have. It can only
// narrow what the parent run has.
type Profile struct {
	Name              string   `yaml:"name" json:"name"`
	Description       string   `yaml:"description" json:"description"`
	Skills            []string `yaml:"skills" json:"skills"`
	AllowedTools      []string `yaml:"allowedTools" json:"allowedTools"`
	AllowSkillScripts []string `yaml:"allowSkillScripts" json:"allowSkillScripts"`
	Sandbox           string   `yaml:"sandbox" json:"sandbox,omitempty"`
	MaxTurns          int      `yaml:"maxTurns" json:"maxTurns"`
	Timeout           string   `yaml:"timeout" json:"timeout,omitempty"`
	Model             string   `yaml:"model" json:"model,omitempty"`
	MaxDepth          int      `yaml:"maxDepth" json:"maxDepth"` // 0: no grandchildren
}

// loadProfiles reads --profiles and refuses any profile that would widen
// what the parent has: a write or side-effect tool, a script or a weaker
// sandbox the parent was not given.
func loadProfiles(path string, parent Options) ([]Profile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, usageErr("profiles_invalid", "--profiles %s: %v", path, err)
	}
	var doc struct {
		Profiles []Profile `yaml:"profiles"`
	}
	if err := yaml.UnmarshalWithOptions(data, &doc, yaml.Strict()); err != nil {
		return nil, usageErr("profiles_invalid", "--profiles %s: %v", path, err)
	}
	if len(doc.Profiles) == 0 {
		return nil, usageErr("profiles_invalid", "--profiles %s defines no profiles (a top-level profiles: list)", path)
	}
	seen := map[string]bool{}
	for _, p := range doc.Profiles {
		widen := func(format string, args ...any) error {
			return usageErr("profile_widens_parent", "profile %s: %s; a profile can narrow what the run has, never widen it", p.Name, fmt.Sprintf(format, args...))
		}
		if p.Name == "" || seen[p.Name] {
			return nil, usageErr("profiles_invalid", "--profiles %s: every profile needs a unique name", path)
		}
		seen[p.Name] = true
		for _, tl := range p.AllowedTools {
			if strings.Contains(" "+readOnlyToolNames+" ", " "+tl+" ") {
				continue
			}
			if !slices.Contains(parent.AllowTools, tl) {
				return nil, widen("tool %s is not allowed to the parent run", tl)
			}
		}
		for _, sc := range p.AllowSkillScripts {
			if !slices.Contains(parent.AllowSkillScripts, sc) {
				return nil, widen("script %s is not allowed to the parent run", sc)
			}
		}
		if p.Sandbox == "none" && parent.Sandbox != "none" {
			return nil, widen("sandbox none is weaker than the parent's %s", parent.Sandbox)
		}
		if p.Sandbox != "" && p.Sandbox != "auto" && p.Sandbox != "bwrap" && p.Sandbox != "landlock" && p.Sandbox != "none" {
			return nil, usageErr("profiles_invalid", "profile %s: sandbox %q: use auto, bwrap, landlock or none", p.Name, p.Sandbox)
		}
		if p.Timeout != "" {
			if _, err := time.ParseDuration(p.Timeout); err != nil {
				return nil, usageErr("profiles_invalid", "profile %s: timeout %q is not a duration such as 5m", p.Name, p.Timeout)
			}
		}
		if p.MaxTurns < 0 || p.MaxDepth < 0 {
			return nil, usageErr("profiles_invalid", "profile %s: maxTurns and maxDepth must not be negative", p.Name)
		}
		if slices.Contains(p.AllowedTools, delegateToolName) && p.MaxDepth == 0 {
			return nil, widen("delegate_task needs maxDepth of at least 1")
		}
	}
	return doc.Profiles, nil
}

// ChildResult is what a parent receives from a child run: a bounded
// summary and its outcome, never the child's raw tool outputs or skill
// text.
type ChildResult struct {
	Type       string     `json:"type"`
	Status     string     `json:"status"` // ok | limit | failed | refused | interrupted | provider-error
	Summary    string     `json:"summary"`
	Truncated  bool       `json:"truncated,omitempty"`
	ExitCode   int        `json:"exitCode"`
	Usage      loop.Usage `json:"usage"`
	ChildRunID string     `json:"childRunId"`
	Profile    string     `json:"profile"`
}

// delegateTool is delegate_task: a bounded task for a child run that
// starts from a fresh context with exactly its profile's skills and tools.
type delegateTool struct {
	r        *runner
	profiles []Profile
	model    loop.Model
}

func (t *delegateTool) Effect() loop.Effect { return loop.EffectSideEffect }

func (t *delegateTool) Spec() loop.ToolSpec {
	var names []string
	var b strings.Builder
	for _, p := range t.profiles {
		names = append(names, p.Name)
		fmt.Fprintf(&b, "- %s: %s\n", p.Name, p.Description)
	}
	enum, _ := json.Marshal(names)
	return loop.ToolSpec{
		Name: delegateToolName,
		Description: "Hand a bounded task to a subagent that starts from a fresh context with only its profile's skills and tools; you receive its summary. Profiles:\n" +
			b.String(),
		Parameters: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["profile","task"],"properties":{` +
			`"profile":{"type":"string","enum":` + string(enum) + `},` +
			`"task":{"type":"string","description":"the whole task: the subagent sees nothing else"}}}`),
	}
}

func (t *delegateTool) Call(ctx context.Context, call loop.ToolCall, raw json.RawMessage) (loop.ToolResult, error) {
	var args struct {
		Profile string `json:"profile"`
		Task    string `json:"task"`
	}
	if err := json.Unmarshal(raw, &args); err != nil {
		return loop.ErrorResult("arguments_invalid", err.Error(), nil), nil
	}
	i := slices.IndexFunc(t.profiles, func(p Profile) bool { return p.Name == args.Profile })
	if i < 0 {
		return loop.ErrorResult("profile_not_found", "profile not found: "+args.Profile, nil), nil
	}
	p := t.profiles[i]
	r := t.r
	id := fileSafeName(call.ID)
	childDir := filepath.Join(r.path(dirChildren), id)
	var res *Result
	var err error
	var m Manifest
	switch rerr := artifacts.ReadJSON(filepath.Join(childDir, fileManifest), "harness.run", 1, &m); {
	case rerr == nil && m.Status == StatusSucceeded:
		// The child finished before the parent stopped: use its answer.
		res = &Result{RunID: m.RunID, RunDir: childDir, Status: m.Status, ExitCode: m.ExitCode}
		if m.Final != nil {
			res.Final = m.Final.Content
		}
	case rerr == nil:
		// The parent stopped while the child ran: continue the child
		// from its own journal.
		res, err = resumeChild(ctx, childDir, t.model, r)
	default:
		res, err = Run(ctx, t.childOptions(p, args.Task, id))
	}
	out := ChildResult{Type: "harness.subagent-result", ChildRunID: id, Profile: p.Name, Status: "failed", ExitCode: ExitFailed, Usage: loop.Usage{}}
	if res != nil {
		out.ExitCode = res.ExitCode
		out.Status = map[string]string{StatusSucceeded: "ok", StatusLimit: "limit", StatusFailed: "failed", StatusRefused: "refused",
			StatusInterrupted: "interrupted", StatusProvider: "provider-error"}[res.Status]
		out.Summary, out.Truncated = bounded(res.Final, maxSummaryChars)
		var cm Manifest
		if artifacts.ReadJSON(filepath.Join(res.RunDir, fileManifest), "harness.run", 1, &cm) == nil {
			out.Usage = cm.Usage.Total
		}
	}
	if err != nil && res == nil {
		out.Summary = AsError(err).Msg
		out.ExitCode = AsError(err).Exit
	}
	if ctx.Err() != nil {
		return loop.ToolResult{}, ctx.Err()
	}
	b, _ := json.Marshal(out)
	status := loop.StatusOK
	if out.Status != "ok" && out.Status != "limit" {
		status = loop.StatusError
	}
	return loop.ToolResult{Content: string(b), Status: status, Record: out, Usage: out.Usage}, nil
}

func bounded(s string, n int) (string, bool) {
	if utf8.RuneCountInString(s) <= n {
		return s, false
	}
	return string([]rune(s)[:n]), true
}

// childOptions builds a child run: the parent's workspace and roots, the
// profile's skills, tools, scripts and limits, the parent's policy, and
// the parent's model (so one cassette serves both).
func (t *delegateTool) childOptions(p Profile, task, id string) Options {
	po := t.r.opts
	o := Options{
		Workspace: t.r.res.workspace, Cwd: t.r.res.cwd, SkillsRoots: t.r.res.skillsRoots,
		Skills: p.Skills, Prompt: task, PromptSource: "subagent:" + p.Name,
		Model: po.Model, BaseURL: po.BaseURL, APIKey: po.APIKey,
		AllowTools: p.AllowedTools, AllowSkillScripts: p.AllowSkillScripts, Sandbox: po.Sandbox,
		MaxTurns: p.MaxTurns, MaxTokens: po.MaxTokens,
		ArtifactsDir: t.r.path(dirChildren), RunID: id,
		CFCMode: po.CFCMode, PromptRole: po.PromptRole, FailOnDenial: po.FailOnDenial, AllowUnmediated: po.AllowUnmediated,
		HonorAllowedTools: po.HonorAllowedTools, TrustSkills: po.TrustSkills, AllowDrift: po.AllowDrift,
		NoSkillCatalog: true, CatalogBudget: po.CatalogBudget,
		Stderr: t.r.stderr, Quiet: false, Now: po.Now, Version: po.Version,
		model: t.model, depth: po.depth + 1, lenientSkills: true, activationSource: SourceSubagent,
	}
	if p.Model != "" {
		o.Model = p.Model
	}
	if p.Sandbox != "" {
		o.Sandbox = p.Sandbox
	}
	if p.Timeout != "" {
		o.Timeout, _ = time.ParseDuration(p.Timeout)
	}
	if o.MaxTurns == 0 {
		o.MaxTurns = 50
	}
	if p.MaxDepth > 0 {
		o.Profiles, o.maxDepth = po.Profiles, po.depth+1+p.MaxDepth
	}
	return o
}

func resumeChild(ctx context.Context, dir string, model loop.Model, parent *runner) (*Result, error) {
	res, err := Resume(ctx, ResumeOptions{RunDir: dir, Stderr: parent.stderr, Now: parent.opts.Now, Version: parent.opts.Version,
		APIKey: parent.opts.APIKey, model: model, Replay: parent.opts.Replay, AllowDrift: parent.opts.AllowDrift})
	var e *Error
	if errors.As(err, &e) && e.Code == "run_succeeded" {
		var m Manifest
		artifacts.ReadJSON(filepath.Join(dir, fileManifest), "harness.run", 1, &m)
		res = &Result{RunID: m.RunID, RunDir: dir, Status: m.Status, ExitCode: m.ExitCode}
		if m.Final != nil {
			res.Final = m.Final.Content
		}
		return res, nil
	}
	return res, err
}
