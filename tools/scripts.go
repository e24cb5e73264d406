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
	"github.com/harness-dev/harness/grant"
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
	// Stager holds the verified copies of skills, shared with the MCP
	// servers (nil: the tool keeps its own).
	Stager *Stager
	// WasmMemoryLimit caps a WebAssembly module's linear memory in bytes
	// (0 = scripts.DefaultWasmMemory).
	WasmMemoryLimit uint64
	// Network gives scripts of skills that declare hosts their proxy
	// (nil: no script has network). WebAssembly modules never have any.
	Network *Network
	// PassEnv are the names the operator passes (--pass-env): a script
	// gets those its skill declares; Lookup reads their values.
	PassEnv []string
	Lookup  func(string) (string, bool)
	// Git is the run's index of git control paths: a .git a script makes
	// anywhere in the workspace is removed after the call (nil: only the
	// root's).
	Git *grant.GitIndex
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

	mu    sync.Mutex
	rec   record.ScriptExecutions
	stage *Stager
	wasm  *scripts.WasmEngine // made on the first module call
}

// NewScriptTool builds run_skill_script; Close removes what it staged.
func NewScriptTool(cfg Scripts) *ScriptTool {
	st := cfg.Stager
	if st == nil {
		st = NewStager()
	}
	return &ScriptTool{cfg: cfg, stage: st,
		rec: record.ScriptExecutions{Envelope: artifacts.NewEnvelope(record.TypeScriptExecutions, record.Version), Executions: []record.ScriptExecution{}}}
}

// Close removes the staging directories.
func (t *ScriptTool) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cfg.Stager == nil {
		t.stage.Close()
	}
	if t.wasm != nil {
		t.wasm.Close(context.Background())
	}
}

// wasmEngine is the run's one engine: modules compile once per run.
func (t *ScriptTool) wasmEngine(ctx context.Context) (*scripts.WasmEngine, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.wasm == nil {
		e, err := scripts.NewWasmEngine(ctx, t.cfg.WasmMemoryLimit)
		if err != nil {
			return nil, err
		}
		t.wasm = e
	}
	return t.wasm, nil
}

func (t *ScriptTool) Effect() loop.Effect { return loop.EffectSideEffect }

func (t *ScriptTool) Spec() loop.ToolSpec {
	return loop.ToolSpec{
		Name:        "run_skill_script",
		Description: "Run a script of an active skill in a sandbox (no network, the workspace at /workspace; a .wasm module runs under WebAssembly with the workspace read-only). Only scripts the operator allowed by name can run, and only unchanged since the run started. Returns exit code, stdout and stderr (each capped).",
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
	if len(rec.NotUndone) > 0 {
		return res, notUndone("run_skill_script", rec.NotUndone)
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
	timeout, ok := callTimeout(timeoutMs)
	if !ok {
		return fail("timeout_invalid", fmt.Sprintf("timeoutMs must be between 1 and %d", maxScriptTimeout))
	}
	// The skill's own limit narrows, never widens, what the call asks.
	if l, _ := skills.LimitsOf(s.Frontmatter); l != nil && l.Timeout > 0 && int(l.Timeout.Milliseconds()) < timeout {
		timeout, rec.TimeoutBy = int(max(l.Timeout.Milliseconds(), 1)), "skill"
	}
	rec.TimeoutMs = timeout
	isWasm := res.Runtime == scripts.RuntimeWasm
	if cfg.Probe != nil && !isWasm {
		return fail("sandbox_unavailable", fmt.Sprintf("no sandbox can run scripts on this machine (%v); nothing was run. Install bubblewrap, or pass --sandbox none to run on the host", cfg.Probe))
	}
	rec.SandboxBackend = string(cfg.Backend)
	rec.ExecutionTarget = "sandbox"
	switch {
	case isWasm:
		rec.SandboxBackend = string(scripts.BackendWasm)
	case cfg.Backend == scripts.BackendNone:
		rec.ExecutionTarget = "host"
	}
	stage, observed, err := t.stage.Stage(s, rel)
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
	cwdRel, pr := callCwd(ws, cwd)
	if pr != nil {
		return fail(pr.Code, pr.Msg)
	}
	// Paths as the script sees them: sandbox paths, or the staged copy on
	// the host when the operator chose no sandbox.
	skillDir, scriptPath, cwdPath := s.SandboxSkillDir, s.SandboxSkillDir+"/"+rel, ws.SandboxPath(cwdRel)
	if cfg.Backend != scripts.BackendBwrap && !isWasm {
		// Without a mount namespace the script sees host paths.
		skillDir, scriptPath, cwdPath = stage, filepath.Join(stage, rel), filepath.Join(ws.Host, cwdRel)
	}
	rec.Cwd = ws.SandboxPath(cwdRel)
	env := []string{
		"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "LANG=C.UTF-8", "NO_COLOR=1", "DENO_DIR=/tmp/.deno",
		"HARNESS_RUN_ID=" + cfg.RunID, "SKILL_NAME=" + s.Name, "SKILL_DIR=" + skillDir, "SKILL_SCRIPT=" + scriptPath,
		"HARNESS_SCRIPT_EXECUTION_TARGET=" + rec.ExecutionTarget,
	}
	hide, hideHost := hiddenPaths(ws)
	g, err := grant.For(grant.Request{Skill: s, Workspace: ws, Backend: scripts.Backend(rec.SandboxBackend), PassEnv: cfg.PassEnv, Lookup: cfg.Lookup, Git: cfg.Git})
	if err != nil {
		return fail(refusal(err, "grant_failed"))
	}
	rec.Grant = &g.Record
	env = append(env, g.Env...)
	var out *scripts.Result
	if isWasm {
		rec.MemoryLimitBytes = cfg.WasmMemoryLimit
		writes := &wasmWrites{ws: g.View}
		out, err = t.runWasm(ctx, g.View, stage, rel, res.Digest, append([]string{scriptPath}, argv...), append(env, "PWD="+cwdPath), s.SandboxSkillDir, time.Duration(timeout)*time.Millisecond, writes)
		rec.FilesWritten, rec.WriteRefusals = writes.done()
	} else {
		rec.MemoryLimitBytes = cfg.memoryLimit()
		var cmd []string
		cmd, err = scripts.Command(res.Runtime, res.Shebang, scriptPath, argv)
		sock, stop := "", func() {}
		if err == nil {
			sock, rec.Network, stop, err = cfg.Network.egressFor(s, "script:"+rel, cfg.Backend)
		}
		if err == nil {
			defer stop()
			out, err = scripts.Run(ctx, cfg.Backend, scripts.Spec{
				Egress: sock,
				Argv:   cmd, Env: env, Path: os.Getenv("PATH"), Cwd: cwdPath,
				Mounts:    []scripts.Mount{g.Mount, {Host: stage, Sandbox: s.SandboxSkillDir}},
				LimitExec: g.LimitExec, Exec: g.Exec, ExecTemp: g.ExecTemp,
				Hide:     hide,
				HideHost: hideHost,
				Helper:   cfg.Helper,
				Timeout:  time.Duration(timeout) * time.Millisecond,
				Limits:   scripts.Limits{Memory: cfg.MemoryLimit},
			})
		}
	}
	if code, msg, left := afterRun(ctx, g, err, "script"); code != "" {
		rec.NotUndone = left
		return fail(code, msg)
	}
	rec.Argv, rec.DurationMs = out.Argv, out.Duration.Milliseconds()
	rec.StdoutBytes, rec.StderrBytes, rec.Truncated, rec.Signal = out.StdoutLen, out.StderrLen, out.Truncated, out.Signal
	rec.ProcessLimit, rec.ForkRefusals = out.ProcessLimit, out.ForkRefusals
	rec.MemoryLimit, rec.RunAs = out.MemoryLimit, out.RunAs
	code := out.ExitCode
	rec.ExitCode = &code
	rec.Status = statusOf(out)
	rec.OutputDigest = artifacts.DigestBytes(append(append([]byte{}, out.Stdout...), out.Stderr...))
	result := map[string]any{
		"skill": s.Name, "path": rel, "status": rec.Status, "exitCode": code, "signal": out.Signal,
		"stdout": string(out.Stdout), "stderr": string(out.Stderr), "truncated": out.Truncated,
		"mediation": mediation(rec.ExecutionTarget, code, rec.OutputDigest, out.Truncated),
	}
	b, _ := json.Marshal(result)
	return loop.ToolResult{Content: string(b), Status: loop.StatusOK, Record: rec}
}

// callTimeout is a call's timeoutMs, or the default; ok is false outside
// 1 to maxScriptTimeout.
func callTimeout(timeoutMs *int) (timeout int, ok bool) {
	timeout = defaultScriptTimeout
	if timeoutMs != nil {
		timeout = *timeoutMs
	}
	return timeout, timeout >= 1 && timeout <= maxScriptTimeout
}

// callCwd is a call's working directory relative to the workspace ("."
// when it names none), or why it is refused.
func callCwd(ws *workspace.Workspace, cwd string) (string, *workspace.Refusal) {
	if cwd == "" {
		return ".", nil
	}
	rel, err := ws.Resolve(cwd)
	if err != nil {
		return "", workspace.AsRefusal(err)
	}
	return rel, nil
}

// hiddenPaths are the protected paths inside the workspace, as the sandbox
// and as the host see them: covered under bwrap, left out under Landlock.
func hiddenPaths(ws *workspace.Workspace) (sandbox, host []string) {
	for _, p := range ws.Protected {
		if rel, ok := ws.RelOf(p); ok {
			sandbox = append(sandbox, ws.SandboxPath(rel))
			host = append(host, p)
		}
	}
	return sandbox, host
}

// runWasm runs a verified module from the staged copy under WebAssembly:
// the skill's staged files read-only and the workspace, each through an
// os.Root so that no link leads out, and nothing else. The module writes
// the workspace by write_file's rules (writes).
func (t *ScriptTool) runWasm(ctx context.Context, ws *workspace.Workspace, stage, rel string, digest artifacts.Digest, argv, env []string, skillDir string, timeout time.Duration, writes *wasmWrites) (*scripts.Result, error) {
	e, err := t.wasmEngine(ctx)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(stage)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	module, err := root.ReadFile(rel)
	if err != nil {
		return nil, err
	}
	if artifacts.DigestBytes(module) != digest {
		return nil, &scripts.Refusal{Code: "script_snapshot_mismatch", Msg: fmt.Sprintf("%s changed in the staged copy; nothing was run", rel)}
	}
	return e.Run(ctx, scripts.WasmSpec{
		Module: module, Key: string(digest), Args: argv, Env: env,
		Mounts:  []scripts.WasmMount{{FS: ws.FS(), Guest: ws.Sandbox, Writer: writes}, {FS: root.FS(), Guest: skillDir}},
		Timeout: timeout,
	})
}
