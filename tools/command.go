package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
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

// CommandToolName is the tool that runs an operator-allowed command.
const CommandToolName = "run_command"

// maxCommandStdin bounds what a call may give a command on stdin.
const maxCommandStdin = 1 << 20

// CommandPattern is one --allow-command: an exact argv, or an argv prefix
// whose last word is "*" (any further arguments, or none). Words are
// separated by spaces; nothing is expanded or quoted: the command is
// executed directly, never by a shell.
type CommandPattern struct {
	Text   string
	words  []string
	prefix bool
}

// ParseCommandPattern checks one --allow-command entry.
func ParseCommandPattern(s string) (CommandPattern, error) {
	words := strings.Fields(s)
	p := CommandPattern{Text: strings.Join(words, " "), words: words}
	if n := len(words); n > 0 && words[n-1] == "*" {
		p.prefix, p.words = true, words[:n-1]
	}
	switch {
	case len(p.words) == 0:
		return p, outcome.Usage("command_pattern_invalid", "--allow-command %q: give a command, such as \"go test ./...\" or \"npm run *\"", s)
	case slices.Contains(p.words, "*"):
		return p, outcome.Usage("command_pattern_invalid", "--allow-command %q: \"*\" may only end a pattern (\"go test *\"): it stands for any further arguments", s)
	}
	return p, nil
}

// Matches reports whether argv is allowed by p.
func (p CommandPattern) Matches(argv []string) bool {
	if p.prefix {
		return len(argv) >= len(p.words) && slices.Equal(argv[:len(p.words)], p.words)
	}
	return slices.Equal(argv, p.words)
}

// Exact reports whether p allows one argv only, and which.
func (p CommandPattern) Exact() ([]string, bool) { return p.words, !p.prefix }

// Commands is what run_command needs.
type Commands struct {
	Workspace *workspace.Workspace
	Patterns  []CommandPattern
	// Backend is the sandbox probed at run start; Probe is why none could
	// start (commands are then refused, never run unsandboxed).
	Backend scripts.Backend
	Probe   error
	Helper  string
	RunID   string
	Now     func() time.Time
	// RunDir receives command-executions.json, through Redact.
	RunDir      string
	Redact      *artifacts.Redactor
	MemoryLimit uint64
	// Grant is the operator's --command-grant, where a skill's frontmatter
	// would hold its manifest (nil: the whole workspace, as for a skill
	// without one). PassEnv and Lookup give it the operator's variables
	// it names; Network its declared hosts through the egress proxy.
	Grant   map[string]any
	PassEnv []string
	Lookup  func(string) (string, bool)
	Network *Network
	// Git is the run's index of git control paths: a .git a command makes
	// anywhere in the workspace is removed after the call (nil: only the
	// root's).
	Git *grant.GitIndex
	// Cache is a host directory (absolute) shared by every call and run
	// as the toolchains' cache (--command-cache; "": each call's own
	// private /tmp, gone with it).
	Cache string
}

// commandCacheAt is where the shared cache appears under bwrap.
const commandCacheAt = "/harness-cache"

// CommandTool runs an argv the operator allowed, in the sandbox.
type CommandTool struct {
	cfg Commands
	mu  sync.Mutex
	rec record.CommandExecutions
}

func NewCommandTool(cfg Commands) *CommandTool {
	return &CommandTool{cfg: cfg, rec: record.CommandExecutions{
		Envelope: artifacts.NewEnvelope(record.TypeCommandExecutions, record.Version), Executions: []record.CommandExecution{}}}
}

func (t *CommandTool) Effect() loop.Effect { return loop.EffectSideEffect }

func (t *CommandTool) Spec() loop.ToolSpec {
	var allowed []string
	for _, p := range t.cfg.Patterns {
		allowed = append(allowed, p.Text)
	}
	return loop.ToolSpec{
		Name: CommandToolName,
		Description: "Run a command in the workspace, in a sandbox without network. argv is executed directly, not by a shell: " +
			"no pipes, redirections or variables. Only these commands are allowed (\"*\" at the end: any further arguments): " + strings.Join(allowed, "; ") + ".",
		Parameters: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["argv"],"properties":{` +
			`"argv":{"type":"array","items":{"type":"string"},"minItems":1,"description":"the command and its arguments"},` +
			`"cwd":{"type":"string","description":"working directory relative to the workspace (default: its root)"},` +
			`"timeoutMs":{"type":"integer","minimum":1,"maximum":600000,"description":"default 60000"},` +
			`"stdin":{"type":"string","description":"text given to the command on standard input"}}}`),
	}
}

func (t *CommandTool) Call(ctx context.Context, call loop.ToolCall, raw json.RawMessage) (loop.ToolResult, error) {
	var args struct {
		Argv      []string `json:"argv"`
		Cwd       string   `json:"cwd"`
		TimeoutMs *int     `json:"timeoutMs"`
		Stdin     string   `json:"stdin"`
	}
	if err := json.Unmarshal(raw, &args); err != nil {
		return loop.ErrorResult("arguments_invalid", err.Error(), nil), nil
	}
	rec := record.CommandExecution{Type: record.TypeCommandExecution, OutputID: call.ID, RunID: t.cfg.RunID,
		Argv: nonNil(args.Argv), ExecutedAt: t.cfg.Now().UTC(), StdinBytes: len(args.Stdin)}
	res := t.execute(ctx, &rec, args.Argv, args.Cwd, args.TimeoutMs, args.Stdin)
	t.mu.Lock()
	t.rec.Executions = append(t.rec.Executions, rec)
	err := t.cfg.Redact.WriteJSON(filepath.Join(t.cfg.RunDir, record.FileCommandExecutions), &t.rec)
	t.mu.Unlock()
	if err != nil {
		return loop.ToolResult{}, err
	}
	if len(rec.NotUndone) > 0 {
		return res, notUndone(CommandToolName, rec.NotUndone)
	}
	return res, nil
}

func (t *CommandTool) execute(ctx context.Context, rec *record.CommandExecution, argv []string, cwd string, timeoutMs *int, stdin string) loop.ToolResult {
	cfg := t.cfg
	fail := func(code, msg string) loop.ToolResult {
		rec.Status, rec.Error = "error", &outcome.Record{Code: code, Message: msg}
		return loop.ErrorResult(code, msg, rec)
	}
	i := slices.IndexFunc(cfg.Patterns, func(p CommandPattern) bool { return p.Matches(argv) })
	if i < 0 {
		var allowed []string
		for _, p := range cfg.Patterns {
			allowed = append(allowed, fmt.Sprintf("%q", p.Text))
		}
		return fail("command_not_allowed", fmt.Sprintf("%q is not an allowed command; the operator allows %s (argv is matched word for word, and is never given to a shell)", strings.Join(argv, " "), strings.Join(allowed, ", ")))
	}
	rec.Pattern = cfg.Patterns[i].Text
	timeout, ok := callTimeout(timeoutMs)
	if !ok {
		return fail("timeout_invalid", fmt.Sprintf("timeoutMs must be between 1 and %d", maxScriptTimeout))
	}
	rec.TimeoutMs = timeout
	if len(stdin) > maxCommandStdin {
		return fail("stdin_too_large", fmt.Sprintf("stdin is %d bytes; at most %d", len(stdin), maxCommandStdin))
	}
	if cfg.Probe != nil {
		return fail("sandbox_unavailable", fmt.Sprintf("no sandbox can run commands on this machine (%v); nothing was run. Install bubblewrap, or pass --sandbox none to run on the host", cfg.Probe))
	}
	rec.SandboxBackend, rec.ExecutionTarget = string(cfg.Backend), "sandbox"
	if cfg.Backend == scripts.BackendNone {
		rec.ExecutionTarget = "host"
	}
	ws := cfg.Workspace
	cwdRel, pr := callCwd(ws, cwd)
	if pr != nil {
		return fail(pr.Code, pr.Msg)
	}
	rec.Cwd = ws.SandboxPath(cwdRel)
	cwdPath := ws.SandboxPath(cwdRel)
	if cfg.Backend != scripts.BackendBwrap {
		cwdPath = filepath.Join(ws.Host, cwdRel)
	}
	// Granted as a skill's code is: by the operator's --command-grant as
	// if it were the skill's manifest, or, without one, the whole
	// workspace, its protected paths read-only, no network, none of the
	// operator's variables.
	as := &skills.Skill{Name: CommandToolName, Frontmatter: cfg.Grant}
	g, err := grant.For(grant.Request{Skill: as, Workspace: ws, Backend: cfg.Backend, PassEnv: cfg.PassEnv, Lookup: cfg.Lookup, Git: cfg.Git})
	if err != nil {
		return fail(refusal(err, "grant_failed"))
	}
	sock, _, stop, err := cfg.Network.egressFor(as, "command:"+strings.Join(argv, " "), cfg.Backend)
	if err != nil {
		return fail(refusal(err, "network_failed"))
	}
	defer stop()
	rec.Grant = &g.Record
	hide, hideHost := hiddenPaths(ws)
	// Toolchains keep caches under HOME and XDG_CACHE_HOME: the call's
	// private /tmp, gone with it, unless the operator shares a directory.
	cache := "/tmp/.cache"
	mounts := []scripts.Mount{g.Mount}
	if cfg.Cache != "" {
		cache = cfg.Cache
		if cfg.Backend == scripts.BackendBwrap {
			cache = commandCacheAt
		}
		mounts = append(mounts, scripts.Mount{Host: cfg.Cache, Sandbox: commandCacheAt, Writable: true})
	}
	env := []string{"PATH=/usr/local/go/bin:/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "XDG_CACHE_HOME=" + cache, "GOCACHE=" + cache + "/go-build",
		"GOMODCACHE=" + cache + "/go-mod", "GOPATH=/tmp/go", "GOTOOLCHAIN=local", "npm_config_cache=" + cache + "/npm", "npm_config_update_notifier=false", "LANG=C.UTF-8", "NO_COLOR=1", "HARNESS_RUN_ID=" + cfg.RunID}
	env = append(env, g.Env...)
	out, err := scripts.Run(ctx, cfg.Backend, scripts.Spec{
		Argv: argv, Env: env, Path: os.Getenv("PATH"), Cwd: cwdPath, Stdin: []byte(stdin), Egress: sock,
		Mounts: mounts, Hide: hide, HideHost: hideHost, Helper: cfg.Helper, LimitExec: g.LimitExec, Exec: g.Exec, ExecTemp: g.ExecTemp,
		Timeout: time.Duration(timeout) * time.Millisecond,
		Limits:  scripts.Limits{Memory: cfg.MemoryLimit},
	})
	if code, msg, left := afterRun(ctx, g, err, "command"); code != "" {
		rec.NotUndone = left
		return fail(code, msg)
	}
	rec.DurationMs = out.Duration.Milliseconds()
	rec.StdoutBytes, rec.StderrBytes, rec.Truncated, rec.Signal = out.StdoutLen, out.StderrLen, out.Truncated, out.Signal
	rec.ProcessLimit, rec.ForkRefusals, rec.MemoryLimit, rec.RunAs = out.ProcessLimit, out.ForkRefusals, out.MemoryLimit, out.RunAs
	rec.MemoryLimitBytes = cfg.MemoryLimit
	code := out.ExitCode
	rec.ExitCode = &code
	rec.Status = statusOf(out)
	rec.OutputDigest = artifacts.DigestBytes(append(append([]byte{}, out.Stdout...), out.Stderr...))
	result := map[string]any{
		"argv": argv, "status": rec.Status, "exitCode": code, "signal": out.Signal,
		"stdout": string(out.Stdout), "stderr": string(out.Stderr), "truncated": out.Truncated,
		"mediation": mediation(rec.ExecutionTarget, code, rec.OutputDigest, out.Truncated),
	}
	b, _ := json.Marshal(result)
	return loop.ToolResult{Content: string(b), Status: loop.StatusOK, Record: rec}
}

// mediation is the record of what came out that travels with the output to
// the model. It names nothing of the host (not the sandbox backend auto
// chose, not the duration): what the model is sent is part of the next
// request's cassette key, so a recording must replay on any machine that
// can run it. The execution record keeps both.
func mediation(target string, exitCode int, output artifacts.Digest, truncated bool) map[string]any {
	return map[string]any{"target": target, "exitCode": exitCode, "outputDigest": output, "truncated": truncated}
}

// refusal is err's stable code and sentence when it is a sandbox refusal,
// else fallback and err's text.
func refusal(err error, fallback string) (code, msg string) {
	var ref *scripts.Refusal
	if errors.As(err, &ref) {
		return ref.Code, ref.Msg
	}
	return fallback, err.Error()
}

// statusOf is how an execution that started ended, in the records' words.
func statusOf(out *scripts.Result) string {
	switch {
	case out.MemoryExceeded:
		return "memory_limit"
	case out.TimedOut:
		return "timeout"
	}
	return "executed"
}
