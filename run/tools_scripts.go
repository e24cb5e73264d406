package run

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
	"github.com/harness-dev/harness/scripts"
	"github.com/harness-dev/harness/skills"
)

const (
	fileScriptExecutions = "skill-script-executions.json"
	defaultScriptTimeout = 60000
	maxScriptTimeout     = 600000
)

// ScriptExecutions is skill-script-executions.json: every run_skill_script
// attempt, success or refusal, in call order.
type ScriptExecutions struct {
	artifacts.Envelope
	Executions []ScriptExecution `json:"executions"`
}

// ScriptExecution is one attempt to run a skill script.
type ScriptExecution struct {
	Type                  string              `json:"type"`
	OutputID              string              `json:"outputId"`
	RunID                 string              `json:"runId"`
	SkillName             string              `json:"skillName"`
	Path                  string              `json:"path"`
	Status                string              `json:"status"` // executed | error | timeout
	ExecutedAt            time.Time           `json:"executedAt"`
	DurationMs            int64               `json:"durationMs"`
	ExecutionTarget       string              `json:"executionTarget,omitempty"` // sandbox | host
	SandboxBackend        string              `json:"sandboxBackend,omitempty"`
	Runtime               string              `json:"runtime,omitempty"`
	Argv                  []string            `json:"argv"`
	Args                  []string            `json:"args"`
	Cwd                   string              `json:"cwd,omitempty"`
	ResourcePath          string              `json:"resourcePath,omitempty"`
	SandboxResourcePath   string              `json:"sandboxResourcePath,omitempty"`
	RegistryDigest        artifacts.Digest    `json:"registryDigest,omitempty"`
	ObservedDigest        artifacts.Digest    `json:"observedDigest,omitempty"`
	DigestMatchesRegistry *bool               `json:"digestMatchesRegistry,omitempty"`
	ExitCode              *int                `json:"exitCode,omitempty"`
	Signal                string              `json:"signal,omitempty"`
	StdoutBytes           int64               `json:"stdoutBytes"`
	StderrBytes           int64               `json:"stderrBytes"`
	Truncated             bool                `json:"truncated"`
	ProcessLimit          string              `json:"processLimit,omitempty"` // pids-cgroup | rlimit
	OutputDigest          artifacts.Digest    `json:"outputDigest,omitempty"` // of the kept stdout then stderr
	ForkRefusals          int                 `json:"forkRefusals,omitempty"`
	Diagnostics           []skills.Diagnostic `json:"diagnostics"`
	Error                 *ErrorRecord        `json:"error,omitempty"`
}

// SandboxRecord is the sandbox as probed at run start, for run.json.
type SandboxRecord struct {
	Requested string `json:"requested"`
	Backend   string `json:"backend,omitempty"`
	Error     string `json:"error,omitempty"`
}

// parseScriptAllow checks one --allow-skill-script entry.
func parseScriptAllow(entry string) (skill, rel string, err error) {
	skill, rel, ok := strings.Cut(entry, ":")
	if !ok || skill == "" || !strings.HasPrefix(rel, "scripts/") || path.Clean(rel) != rel || skills.CheckResourcePath(rel) != nil {
		return "", "", usageErr("script_allow_invalid", "--allow-skill-script %q: allowed skill script must use skill:scripts/path form, e.g. pattern-dev:scripts/build.sh", entry)
	}
	return skill, rel, nil
}

// scriptTool is run_skill_script.
type scriptTool struct {
	r       *runner
	backend scripts.Backend
	probe   error
	helper  string // the harness binary, for the landlock backend

	mu     sync.Mutex
	rec    ScriptExecutions
	staged map[string]*staging // by skill name
}

func (r *runner) scriptTool(ctx context.Context) *scriptTool {
	t := &scriptTool{r: r, staged: map[string]*staging{},
		rec: ScriptExecutions{Envelope: artifacts.NewEnvelope("harness.skill-script-executions", 1), Executions: []ScriptExecution{}}}
	want := scripts.Backend(r.opts.Sandbox)
	t.helper, _ = os.Executable()
	t.backend, t.probe = scripts.Probe(ctx, want, t.helper)
	r.manifest.Inputs.Sandbox = &SandboxRecord{Requested: string(want), Backend: string(t.backend)}
	if t.probe != nil {
		r.manifest.Inputs.Sandbox.Error = t.probe.Error()
	}
	return t
}

// cleanup removes the staging directories.
func (t *scriptTool) cleanup() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, st := range t.staged {
		d := st.dir
		filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
			if err == nil && e.IsDir() {
				os.Chmod(p, 0o755)
			}
			return nil
		})
		os.RemoveAll(d)
	}
}

func (t *scriptTool) Effect() loop.Effect { return loop.EffectSideEffect }

func (t *scriptTool) Spec() loop.ToolSpec {
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

func (t *scriptTool) Call(ctx context.Context, call loop.ToolCall, raw json.RawMessage) (loop.ToolResult, error) {
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
	r := t.r
	rec := ScriptExecution{
		Type: "harness.skill-script-execution", OutputID: call.ID, RunID: r.res.runID, SkillName: args.Skill, Path: args.Path,
		ExecutedAt: r.now().UTC(), Argv: []string{}, Args: nonNil(args.Args), Diagnostics: []skills.Diagnostic{},
	}
	res := t.execute(ctx, &rec, args.Skill, args.Path, args.Args, args.Cwd, args.TimeoutMs)
	t.mu.Lock()
	t.rec.Executions = append(t.rec.Executions, rec)
	err := artifacts.WriteJSON(r.path(fileScriptExecutions), &t.rec)
	t.mu.Unlock()
	if err != nil {
		return loop.ToolResult{}, err
	}
	return res, nil
}

func (t *scriptTool) execute(ctx context.Context, rec *ScriptExecution, skill, rel string, argv []string, cwd string, timeoutMs *int) loop.ToolResult {
	r := t.r
	fail := func(code, msg string) loop.ToolResult {
		rec.Status, rec.Error = "error", &ErrorRecord{Code: code, Message: msg}
		return loop.ErrorResult(code, msg, rec)
	}
	if !slices.Contains(r.opts.AllowSkillScripts, skill+":"+rel) {
		return fail("script_not_allowed", fmt.Sprintf("%s:%s is not allowed: the operator allows scripts one by one with --allow-skill-script skill:scripts/path", skill, rel))
	}
	if r.registry == nil {
		return fail("skill_registry_missing", "this run has no skill registry: it was started without --skills-root")
	}
	s, ok := r.registry.Lookup(skill)
	if !ok {
		return fail("skill_not_found", fmt.Sprintf("skill not found: %s", skill))
	}
	if !r.acts.isActive(s.Name) {
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
	if t.probe != nil {
		return fail("sandbox_unavailable", fmt.Sprintf("no sandbox can run scripts on this machine (%v); nothing was run. Install bubblewrap, or pass --sandbox none to run on the host", t.probe))
	}
	rec.SandboxBackend = string(t.backend)
	rec.ExecutionTarget = "sandbox"
	if t.backend == scripts.BackendNone {
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
	ws := r.ws
	cwdRel := "."
	if cwd != "" {
		if cwdRel, err = ws.resolvePath(cwd); err != nil {
			var pr *pathRefusal
			errors.As(err, &pr)
			return fail(pr.Code, pr.Msg)
		}
	}
	// Paths as the script sees them: sandbox paths, or the staged copy on
	// the host when the operator chose no sandbox.
	skillDir, scriptPath, cwdPath := s.SandboxSkillDir, s.SandboxSkillDir+"/"+rel, ws.sandboxPath(cwdRel)
	if t.backend != scripts.BackendBwrap {
		// Without a mount namespace the script sees host paths.
		skillDir, scriptPath, cwdPath = stage, filepath.Join(stage, rel), filepath.Join(ws.Host, cwdRel)
	}
	cmd, err := scripts.Command(res.Runtime, res.Shebang, scriptPath, argv)
	if err != nil {
		var ref *scripts.Refusal
		errors.As(err, &ref)
		return fail(ref.Code, ref.Msg)
	}
	rec.Cwd = ws.sandboxPath(cwdRel)
	env := []string{
		"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "LANG=C.UTF-8", "NO_COLOR=1", "DENO_DIR=/tmp/.deno",
		"HARNESS_RUN_ID=" + r.res.runID, "SKILL_NAME=" + s.Name, "SKILL_DIR=" + skillDir, "SKILL_SCRIPT=" + scriptPath,
		"HARNESS_SCRIPT_EXECUTION_TARGET=" + rec.ExecutionTarget,
	}
	var hide, hideHost []string
	for _, p := range ws.Protected {
		hide = append(hide, ws.sandboxPath(p))
		hideHost = append(hideHost, filepath.Join(ws.Host, filepath.FromSlash(p)))
	}
	out, err := scripts.Run(ctx, t.backend, scripts.Spec{
		Argv: cmd, Env: env, Path: os.Getenv("PATH"), Cwd: cwdPath,
		Mounts: []scripts.Mount{
			{Host: ws.Host, Sandbox: ws.Sandbox, Writable: true},
			{Host: stage, Sandbox: s.SandboxSkillDir},
		},
		Hide:     hide,
		HideHost: hideHost,
		Helper:   t.helper,
		Timeout:  time.Duration(timeout) * time.Millisecond,
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
	code := out.ExitCode
	rec.ExitCode = &code
	rec.Status = "executed"
	if out.TimedOut {
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
func (t *scriptTool) stage(s *skills.Skill, script string) (string, artifacts.Digest, error) {
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
	dir, err := os.MkdirTemp("", "harness-stage-")
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
	filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err == nil && e.IsDir() {
			os.Chmod(p, 0o555)
		}
		return nil
	})
	return st, nil
}
