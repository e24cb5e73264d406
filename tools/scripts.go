package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/scripts"
	"github.com/harness-dev/harness/skills"
	"github.com/harness-dev/harness/workspace"
)

const (
	defaultScriptTimeout = 60000
	maxScriptTimeout     = 600000
)

// ParseScriptAllow checks one --allow-skill-script entry.
func ParseScriptAllow(entry string) (skill, rel string, err error) {
	skill, rel, ok := strings.Cut(entry, ":")
	if !ok || skill == "" || !strings.HasPrefix(rel, "scripts/") || path.Clean(rel) != rel || skills.CheckResourcePath(rel) != nil {
		return "", "", outcome.Usage("script_allow_invalid", "--allow-skill-script %q: allowed skill script must use skill:scripts/path form, e.g. pattern-dev:scripts/build.sh", entry)
	}
	return skill, rel, nil
}

// Scripts is what run_skill_script needs.
type Scripts struct {
	Registry  *skills.Registry
	Active    *Activations
	Workspace *workspace.Workspace
	// Allowed are the exact skill:scripts/path pairs the operator allowed.
	Allowed []string
	// Backend is the sandbox probed at run start; Probe is why none could
	// start (scripts are then refused, never run unsandboxed).
	Backend scripts.Backend
	Probe   error
	// Helper is the harness binary, re-executed by the landlock backend.
	Helper string
	RunID  string
	Now    func() time.Time
	// RunDir receives skill-script-executions.json, through Redact.
	RunDir string
	Redact *artifacts.Redactor
	// MemoryLimit caps one call's memory in bytes (0 = scripts.DefaultMemory).
	MemoryLimit uint64
}

func (s Scripts) memoryLimit() uint64 {
	if s.MemoryLimit == 0 {
		return scripts.DefaultMemory
	}
	return s.MemoryLimit
}

// ScriptTool is run_skill_script.
type ScriptTool struct {
	cfg Scripts

	mu     sync.Mutex
	rec    record.ScriptExecutions
	staged map[string]*staging // by skill name
}

// NewScriptTool builds run_skill_script; Close removes what it staged.
func NewScriptTool(cfg Scripts) *ScriptTool {
	return &ScriptTool{cfg: cfg, staged: map[string]*staging{},
		rec: record.ScriptExecutions{Envelope: artifacts.NewEnvelope(record.TypeScriptExecutions, record.Version), Executions: []record.ScriptExecution{}}}
}

// Close removes the staging directories.
func (t *ScriptTool) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, st := range t.staged {
		scripts.RemoveSealed(st.dir)
	}
}

func (t *ScriptTool) Effect() loop.Effect { return loop.EffectSideEffect }

func (t *ScriptTool) Spec() loop.ToolSpec {
	return loop.ToolSpec{
		Name:        "run_skill_script",
		Description: "Run a script of an active skill in a sandbox (no network, the workspace at /workspace). Only scripts the operator allowed by name can run, and only unchanged since the run started. Returns exit code, stdout and stderr (each capped).",
		Parameters: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["skill","path"],"properties":{` +
			`"skill":{"type":"string","description":"name of an active skill"},` +
			`"path":{"type":"string","description":"script path relative to the skill directory, under scripts/"},` +
			`"args":{"type":"array","items":{"type":"string"},"description":"arguments passed to the script"},` +
			`"cwd":{"type":"string","description":"working directory: /workspace/... or relative to the working directory (default: the workspace root)"},` +
			`"timeoutMs":{"type":"integer","description":"time limit in milliseconds, 1 to 600000 (default 60000)"}}}`),
	}
}

func (t *ScriptTool) Call(ctx context.Context, call loop.ToolCall, raw json.RawMessage) (loop.ToolResult, error) {
	var args struct {
		Skill     string   `json:"skill"`
		Path      string   `json:"path"`
		Args      []string `json:"args"`
		Cwd       string   `json:"cwd"`
		TimeoutMs *int     `json:"timeoutMs"`
	}
	if err := json.Unmarshal(raw, &args); err != nil {
		return loop.ErrorResult("arguments_invalid", err.Error(), nil), nil
	}
	rec := record.ScriptExecution{
		Type: record.TypeScriptExecution, OutputID: call.ID, RunID: t.cfg.RunID, SkillName: args.Skill, Path: args.Path,
		ExecutedAt: t.cfg.Now().UTC(), Argv: []string{}, Args: nonNil(args.Args), Diagnostics: []skills.Diagnostic{},
	}
	res := t.execute(ctx, &rec, args.Skill, args.Path, args.Args, args.Cwd, args.TimeoutMs)
	t.mu.Lock()
	t.rec.Executions = append(t.rec.Executions, rec)
	err := t.cfg.Redact.WriteJSON(filepath.Join(t.cfg.RunDir, record.FileScriptExecutions), &t.rec)
	t.mu.Unlock()
	if err != nil {
		return loop.ToolResult{}, err
	}
	return res, nil
}

func (t *ScriptTool) execute(ctx context.Context, rec *record.ScriptExecution, skill, rel string, argv []string, cwd string, timeoutMs *int) loop.ToolResult {
	cfg := t.cfg
	fail := func(code, msg string) loop.ToolResult {
		rec.Status, rec.Error = "error", &outcome.Record{Code: code, Message: msg}
		return loop.ErrorResult(code, msg, rec)
	}
	if !slices.Contains(cfg.Allowed, skill+":"+rel) {
		return fail("script_not_allowed", fmt.Sprintf("%s:%s is not allowed: the operator allows scripts one by one with --allow-skill-script skill:scripts/path", skill, rel))
	}
	if cfg.Registry == nil {
		return fail("skill_registry_missing", "this run has no skill registry: it was started without --skills-root")
	}
	s, ok := cfg.Registry.Lookup(skill)
	if !ok {
		return fail("skill_not_found", fmt.Sprintf("skill not found: %s", skill))
	}
	if !cfg.Active.IsActive(s.Name) {
		return fail("skill_not_activated", fmt.Sprintf("skill '%s' is not active: load it with load_skill first", s.Name))
	}
	if skills.CheckResourcePath(rel) != nil || !strings.HasPrefix(rel, "scripts/") {
		return fail("script_path_invalid", fmt.Sprintf("%q must be a normalized path under scripts/ relative to the skill directory", rel))
	}
	res, ok := s.Resource(rel)
	if !ok || res.Kind != skills.KindScript {
		return fail("script_not_indexed", fmt.Sprintf("%s is not a script of skill '%s' in the run-start snapshot", rel, s.Name))
	}
	rec.Runtime, rec.ResourcePath, rec.SandboxResourcePath, rec.RegistryDigest = res.Runtime, res.HostPath, res.SandboxPath, res.Digest
	timeout := defaultScriptTimeout
	if timeoutMs != nil {
		timeout = *timeoutMs
	}
	if timeout < 1 || timeout > maxScriptTimeout {
		return fail("timeout_invalid", fmt.Sprintf("timeoutMs must be between 1 and %d", maxScriptTimeout))
	}
	if cfg.Probe != nil {
		return fail("sandbox_unavailable", fmt.Sprintf("no sandbox can run scripts on this machine (%v); nothing was run. Install bubblewrap, or pass --sandbox none to run on the host", cfg.Probe))
	}
	rec.SandboxBackend = string(cfg.Backend)
	rec.ExecutionTarget = "sandbox"
	if cfg.Backend == scripts.BackendNone {
		rec.ExecutionTarget = "host"
	}
	stage, observed, err := t.stage(s, rel)
	if observed != "" {
		m := observed == res.Digest
		rec.ObservedDigest, rec.DigestMatchesRegistry = observed, &m
	}
	if err != nil {
		var ref *skills.Refusal
		if errors.As(err, &ref) {
			return fail(ref.Code, ref.Msg)
		}
		return fail("script_staging_failed", err.Error())
	}
	ws := cfg.Workspace
	cwdRel := "."
	if cwd != "" {
		if cwdRel, err = ws.Resolve(cwd); err != nil {
			pr := workspace.AsRefusal(err)
			return fail(pr.Code, pr.Msg)
		}
	}
	// Paths as the script sees them: sandbox paths, or the staged copy on
	// the host when the operator chose no sandbox.
	skillDir, scriptPath, cwdPath := s.SandboxSkillDir, s.SandboxSkillDir+"/"+rel, ws.SandboxPath(cwdRel)
	if cfg.Backend != scripts.BackendBwrap {
		// Without a mount namespace the script sees host paths.
		skillDir, scriptPath, cwdPath = stage, filepath.Join(stage, rel), filepath.Join(ws.Host, cwdRel)
	}
	cmd, err := scripts.Command(res.Runtime, res.Shebang, scriptPath, argv)
	if err != nil {
		var ref *scripts.Refusal
		errors.As(err, &ref)
		return fail(ref.Code, ref.Msg)
	}
	rec.Cwd = ws.SandboxPath(cwdRel)
	env := []string{
		"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "LANG=C.UTF-8", "NO_COLOR=1", "DENO_DIR=/tmp/.deno",
		"HARNESS_RUN_ID=" + cfg.RunID, "SKILL_NAME=" + s.Name, "SKILL_DIR=" + skillDir, "SKILL_SCRIPT=" + scriptPath,
		"HARNESS_SCRIPT_EXECUTION_TARGET=" + rec.ExecutionTarget,
	}
	var hide, hideHost []string
	for _, p := range ws.Protected {
		if rel, ok := ws.RelOf(p); ok {
			hide = append(hide, ws.SandboxPath(rel))
			hideHost = append(hideHost, p)
		}
	}
	out, err := scripts.Run(ctx, cfg.Backend, scripts.Spec{
		Argv: cmd, Env: env, Path: os.Getenv("PATH"), Cwd: cwdPath,
		Mounts: []scripts.Mount{
			{Host: ws.Host, Sandbox: ws.Sandbox, Writable: true},
			{Host: stage, Sandbox: s.SandboxSkillDir},
		},
		Hide:     hide,
		HideHost: hideHost,
		Helper:   cfg.Helper,
		Timeout:  time.Duration(timeout) * time.Millisecond,
		Limits:   scripts.Limits{Memory: cfg.MemoryLimit},
	})
	if err != nil {
		var ref *scripts.Refusal
		if errors.As(err, &ref) {
			return fail(ref.Code, ref.Msg)
		}
		if ctx.Err() != nil {
			return fail("interrupted", "the run was interrupted while the script ran; it was killed")
		}
		return fail("script_failed_to_start", err.Error())
	}
	rec.Argv, rec.DurationMs = out.Argv, out.Duration.Milliseconds()
	rec.StdoutBytes, rec.StderrBytes, rec.Truncated, rec.Signal = out.StdoutLen, out.StderrLen, out.Truncated, out.Signal
	rec.ProcessLimit, rec.ForkRefusals = out.ProcessLimit, out.ForkRefusals
	rec.MemoryLimit, rec.MemoryLimitBytes, rec.RunAs = out.MemoryLimit, cfg.memoryLimit(), out.RunAs
	code := out.ExitCode
	rec.ExitCode = &code
	rec.Status = "executed"
	switch {
	case out.MemoryExceeded:
		rec.Status = "memory_limit"
	case out.TimedOut:
		rec.Status = "timeout"
	}
	rec.OutputDigest = artifacts.DigestBytes(append(append([]byte{}, out.Stdout...), out.Stderr...))
	result := map[string]any{
		"skill": s.Name, "path": rel, "status": rec.Status, "exitCode": code, "signal": out.Signal,
		"stdout": string(out.Stdout), "stderr": string(out.Stderr), "truncated": out.Truncated,
		"durationMs": rec.DurationMs, "sandbox": rec.SandboxBackend,
		// The mediation record: which of harness's sandboxes ran it and
		// what came out, so the output's provenance travels with it.
		"mediation": map[string]any{"backend": rec.SandboxBackend, "target": rec.ExecutionTarget, "exitCode": code,
			"outputDigest": rec.OutputDigest, "truncated": out.Truncated},
	}
	b, _ := json.Marshal(result)
	return loop.ToolResult{Content: string(b), Status: loop.StatusOK, Record: rec}
}

// staging is a skill's verified copy: the files whose bytes equalled the
// snapshot when copied, and what was observed for the others.
type staging struct {
	dir      string
	observed map[string]artifacts.Digest // path -> digest of the bytes read
	verified map[string]bool             // path -> copied (matched the snapshot)
	refusal  map[string]error            // path -> why it could not be read
}

// stage copies the skill's files whose bytes equal the snapshot into a
// run-private directory, read-only, once per skill. Scripts run from
// there: what was checked is what runs, and relative imports resolve
// among verified files only. The script itself must have been verified.
func (t *ScriptTool) stage(s *skills.Skill, script string) (string, artifacts.Digest, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	st, ok := t.staged[s.Name]
	if !ok {
		var err error
		if st, err = stageSkill(s); err != nil {
			return "", "", err
		}
		t.staged[s.Name] = st
	}
	res, _ := s.Resource(script)
	if err := st.refusal[script]; err != nil {
		return "", st.observed[script], err
	}
	if !st.verified[script] {
		return "", st.observed[script], &skills.Refusal{Code: "script_snapshot_mismatch", Msg: fmt.Sprintf("%s changed since the run-start snapshot (digest %s, snapshot %s): refusing to execute changed code, even with --allow-drift", script, st.observed[script], res.Digest)}
	}
	return st.dir, st.observed[script], nil
}

func stageSkill(s *skills.Skill) (*staging, error) {
	dir, err := scripts.MkdirReachable("harness-stage-")
	if err != nil {
		return nil, err
	}
	st := &staging{dir: dir, observed: map[string]artifacts.Digest{}, verified: map[string]bool{}, refusal: map[string]error{}}
	for _, res := range s.Resources {
		dst := filepath.Join(dir, filepath.FromSlash(res.Path))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		f, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		d, n, cerr := skills.CopyResource(s, res.Path, f)
		f.Close()
		st.observed[res.Path] = d
		if cerr != nil || d != res.Digest || n != res.Size {
			os.Remove(dst)
			var ref *skills.Refusal
			if errors.As(cerr, &ref) && ref.Code == "resource_outside_root" {
				st.refusal[res.Path] = ref
			}
			continue
		}
		st.verified[res.Path] = true
		mode := os.FileMode(0o444)
		if res.Executable != nil && *res.Executable {
			mode = 0o555
		}
		os.Chmod(dst, mode)
	}
	scripts.SealDirs(dir)
	return st, nil
}
