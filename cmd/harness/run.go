package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/urfave/cli/v3"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/run"
	"github.com/harness-dev/harness/runopts"
	"github.com/harness-dev/harness/scripts"
)

var runOptions = []option{
	{name: "workspace", usage: "workspace `DIR` the agent works in; the model sees it as /workspace", def: "."},
	{name: "cwd", usage: "working `DIR` for relative tool paths, relative to the workspace", def: ""},
	{name: "skills-root", kind: kindStrings, usage: "skill root `DIR` (precedence in the order given); must lie inside the workspace; \"auto\" uses whichever of .agents/skills, .claude/skills, skills the workspace has"},
	{name: "external-skills-root", kind: kindStrings, usage: "read-only skill root `DIR` outside the workspace (a team's shared skills), after every --skills-root in precedence; the model sees it at /skills/<label>"},
	{name: "embedding-model", usage: "embeddings model `NAME` on the same endpoint: find_skills then fuses BM25 with semantic similarity (recorded in cassettes like any exchange)", def: ""},
	{name: "snapshot-cache", usage: "`DIR` keeping skill file digests by stat fingerprint between runs, so unchanged files are not read again (the snapshot is the same as without)", def: "", defText: "the user cache directory"},
	{name: "no-snapshot-cache", kind: kindBool, usage: "read every skill file, without the snapshot cache"},
	{name: "embedding-cache", usage: "`DIR` keeping skill vectors between runs, by model and text digest (yours alone: one other users may write is not used)", def: "", defText: "the user cache directory"},
	{name: "skill", kind: kindStrings, usage: "preload skill `NAME` for this run (needs --skills-root or --external-skills-root)"},
	{name: "prompt", usage: "the task `TEXT`", def: ""},
	{name: "prompt-file", usage: "read the task from `FILE` (- for standard input; a pipe such as <(command) works too), at most 16 MiB", def: ""},
	{name: "model", usage: "model `NAME`", def: ""},
	{name: "base-url", usage: "OpenAI-compatible API base `URL`", def: "", envFallbacks: []string{"OPENAI_BASE_URL"}},
	{name: "no-skill-catalog", kind: kindBool, usage: "do not offer the load_skill catalog: only --skill preloads reach the model", unitUsage: "do not offer the load_skill catalog: only the skills a UNIT names in its skills field reach the model", scheduleUsage: "do not offer the load_skill catalog: only the scheduled skill reaches the model"},
	{name: "catalog-budget", kind: kindInt, usage: "size of the load_skill catalog in `CHARS`; over it descriptions are shortened, then skills left out (recorded)", def: runopts.DefaultCatalogBudget},
	{name: "cfc-mode", usage: "contextual flow control `MODE`: disabled, observe, enforce-explicit or enforce-strict. Under enforce-explicit a file or skill with injected instructions can make the model write anything the tools you allowed can write; enforce-strict also denies write and side-effect calls whose arguments were copied from what the model read. Use enforce-strict when the workspace or skills are not yours", def: "enforce-explicit"},
	{name: "prompt-role", usage: "`ROLE` of the prompt: direct-command (may authorize write and side-effect tools), context or quote", def: "direct-command"},
	{name: "fail-on-denial", kind: kindBool, usage: "end the run (exit 5) at the first tool call the policy denies", unitUsage: "end a UNIT's run (exit 5) at the first tool call the policy denies"},
	{name: "cfc-allow-unmediated", kind: kindBool, usage: "show the model output of scripts run with --sandbox none (enforce modes withhold it)"},
	{name: "honor-allowed-tools", kind: kindBool, usage: "let active skills' allowed-tools narrow (never widen) the tools the model may call"},
	{name: "trust-skill", kind: kindStrings, usage: "vouch for skill `NAME` despite critical content findings (enforce-strict refuses it otherwise)"},
	{name: "profiles", usage: "YAML `FILE` of subagent profiles for delegate_task (needs --allow-tool delegate_task)", def: "", unitUsage: "YAML `FILE` of subagent profiles for delegate_task (a UNIT needs delegate_task in its allow-tools)", scheduleUsage: "YAML `FILE` of subagent profiles for delegate_task"},
	{name: "skip-eligibility", kind: kindBool, usage: "preload a --skill even if this machine lacks what it declares it needs", unitUsage: "preload the skills a UNIT names in its skills field even if this machine lacks what they declare they need", scheduleUsage: "preload the scheduled skill even if this machine lacks what it declares it needs"},
	{name: "allow-drift", kind: kindBool, usage: "use skill files that changed since the run-start snapshot (marked as drifted) instead of refusing them"},
	{name: "allow-tool", kind: kindStrings, usage: "enable write or side-effect tool `NAME` (read tools are always on): write_file, run_skill_script, delegate_task, create_skill, compose_skills, or an MCP server's KEY__TOOL or KEY__* (KEY is the skill's name, or the server's name in --mcp-config); a server starts only when one of its tools is allowed"},
	{name: "approve-created", usage: "with create_skill/compose_skills: the highest risk `TIER` promoted at once when a draft passes (minimal, low, moderate, or none: every draft waits for harness skills approve)", def: "low"},
	{name: "forge-min-pass-rate", usage: "with create_skill/compose_skills: a draft that ships evals (evals/evals.json or evals/evals.yaml) has them run on this run's model (with and without it, one epoch, no grader) and is promoted only when with_skill's mean pass rate is at least `X` (0 to 1); below it, or when they cannot run, it waits for harness skills approve with the numbers", def: "", defText: "no gate"},
	{name: "reload-created", kind: kindBool, usage: "make a skill this run promotes loadable later in the same run (recorded as a registry delta; resume applies it)", unitUsage: "make a skill a UNIT's run promotes loadable later in the same run (recorded as a registry delta; resume applies it)"},
	{name: "reflect", kind: kindBool, usage: "once the run succeeded, reflect on it as harness reflect does: a model may propose a skill from what the run did, through SkillForge (--approve-created decides how far it goes; a --record or --replay FILE becomes FILE.reflect.jsonl for the reflection)"},
	{name: "skill-source", kind: kindStrings, usage: "a skill index discover_skills searches and install_skill installs from, as `NAME=URL` (a URL or a file; skills.sources in the config file adds more)"},
	{name: "trusted-source", kind: kindStrings, usage: "a URL `PREFIX` or directory install_skill may add skills from (skills.trustedSources in the config file adds more)"},
	{name: "approve-installed", usage: "with install_skill: the highest risk `TIER` made live at once (minimal, low, moderate, or none: every install waits for harness skills approve)", def: "low"},
	{name: "forge-root", usage: "skills root `DIR` promoted skills go into", def: "", defText: "the first --skills-root"},
	{name: "store", usage: "skill store `DIR` keeping every version, its history and the audit log", def: ".harness/skills-store", envFallbacks: []string{"HARNESS_SKILLS_STORE"}},
	{name: "allow-skill-script", kind: kindStrings, usage: "allow run_skill_script to run exactly `SKILL:scripts/PATH` (needs --skills-root and --allow-tool run_skill_script)"},
	{name: "sandbox", usage: "`SANDBOX` for skill scripts and run_command: auto (bwrap, else landlock), bwrap, landlock or none. none runs scripts on the host as you: they can read whatever you can (harness withholds their output in enforce modes and scrubs the API key from every tool result, but a script can still leave a secret in a workspace file)", def: "auto"},
	{name: "script-memory-limit", usage: "memory cap `SIZE` of one skill script call, e.g. 512MiB (a memory cgroup as root, else a watchdog that samples and kills); reaching it is status memory_limit", def: "1GiB"},
	{name: "mcp-config", usage: "MCP servers `FILE` ({\"mcpServers\": {...}}, the shape Claude Code and Codex use): your own servers, started as you (not sandboxed) with a cleared environment; their tools are KEY__TOOL", def: ""},
	{name: "pass-env", kind: kindStrings, usage: "let a skill's scripts and MCP servers, and the servers of --mcp-config, take environment variable `NAME` from harness's environment (a skill's code also needs it declared in metadata.harness.permissions.env); values are never recorded"},
	{name: "mcp-tool-effect", kind: kindStrings, usage: "treat MCP tool `KEY__TOOL=EFFECT` as read, write or side-effect for CFC (a server's readOnlyHint is context, not authority)", defText: "side-effect"},
	{name: "allow-network", kind: kindStrings, usage: "let skill scripts and MCP servers reach `HOST[:PORT]` through harness's egress proxy, when their skill declares it too (metadata.harness.permissions.network; no port: any port); names match as written, never by address; every attempt is in network-log.jsonl. Needs the bwrap sandbox"},
	{name: "confirm-tool", kind: kindStrings, usage: "make every call of tool `NAME` wait for a person (a glob: write_file, run_skill_script, KEY__TOOL, KEY__*); the run stops with exit 6, status awaiting_approval, and `harness resume RUN --approve CALL_ID` (or --deny) decides it. A name that matches no built-in tool, or a KEY that is no MCP server or skill with servers, is refused (exit 2). Calls of a skill marked metadata.harness.destructive always wait"},
	{name: "protect", kind: kindStrings, usage: "keep `PATH` read-only for skill scripts, skill servers and write_file, as harness keeps the workspace's .git, .harness and the skill roots (a write there is refused with protected_path)"},
	{name: "allow-protected-write", kind: kindStrings, usage: "let skill code and write_file write `PATH` although it is protected (.git, .harness, a skill root or a --protect path): git runs hooks and configured commands from .git on the host, outside every sandbox"},
	{name: "wasm-memory-limit", usage: "linear-memory cap `SIZE` of one WebAssembly skill script (scripts/*.wasm, run under wazero with no host access but the workspace and the skill, read-only); growing past it fails inside the module and is status memory_limit", def: "64MiB"},
	{name: "output-schema", usage: "JSON Schema `FILE` the final answer must match (self-contained: a $ref only into its own #/$defs); sent as the structured-output format, checked always; the parsed answer is result.json's structuredOutput", def: ""},
	{name: "schema-retries", kind: kindInt, usage: "times the model may answer again after being told how its answer fails --output-schema (`N`)", def: runopts.DefaultSchemaRetries, unitUsage: "times the model may answer again after being told how its answer fails the UNIT's output-schema (`N`)", scheduleUsage: "times the model may answer again after being told how its answer fails the output schema (`N`)"},
	{name: "allow-empty-answer", kind: kindBool, usage: "accept a final answer with no text (otherwise exit 1, reason empty_answer)"},
	{name: "attach", kind: kindStrings, usage: "hand `FILE` (regular UTF-8 text, at most 1 MiB) to the model as labelled context (data, not a command); recorded with its digest"},
	{name: "output-last-message", usage: "write the final answer to `FILE` (also when the run fails with an answer)", def: ""},
	{name: "result-file", usage: "copy result.json to `FILE`", def: ""},
	{name: "allow-command", kind: kindStrings, usage: "let run_command (with --allow-tool run_command) run `PATTERN`: an exact command (\"go test ./...\") or a prefix ending in * (\"npm run *\"); words are separated by spaces and the command is run directly, never by a shell, in the sandbox with the workspace and no network. A prefix runs whatever code the tool runs: \"go test *\" allows go test -exec PROGRAM, \"npm run *\" every script in package.json"},
	{name: "command-grant", usage: "bound what run_command's commands may touch by `FILE`, with the fields of a skill's metadata.harness.permissions (filesystem.read, filesystem.write, env, exec, network; exec names programs on PATH, absolute files, directories ending in / and $TMPDIR/, docs/permissions.md)", def: "", defText: "the whole workspace, no network, no environment"},
	{name: "command-cache", usage: "share `DIR` across run_command's calls and runs as its toolchains' cache (Go's build and module caches, npm's). What one call puts there, the next call's and run's toolchain uses: a module planted in Go's module cache is what the next go test builds", def: "", defText: "each call's own, gone with it"},
	{name: "tier", kind: kindStrings, usage: "map a model tier skills ask for (metadata.harness.tier: light, standard, heavy, vision) to a model, as `TIER=MODEL`: a child run started with such a skill (or a pipeline phase with tier:) runs on it; standard is --model unless mapped, and vision marks a model the operator vouches can see", unitUsage: "map a model tier skills ask for (metadata.harness.tier: light, standard, heavy, vision) to a model, as `TIER=MODEL`: a child run started with such a skill (or a UNIT with tier:) runs on it; standard is --model unless mapped, and vision marks a model the operator vouches can see"},
	{name: "price", kind: kindStrings, usage: "what a model costs, as `MODEL=IN/OUT` per million input and output tokens: result.json then gives a cost per model and in total"},
	{name: "fallback-model", usage: "model `NAME` to continue with when --model fails with an outage after its retries (recorded in the journal and result.json)", def: ""},
	{name: "wire-api", usage: "protocol `API` the endpoint speaks: chat (Chat Completions, /chat/completions) or responses (the Responses API, /responses: reasoning models keep their encrypted reasoning between turns, sent back by harness since nothing is stored with the provider); part of the run's identity and of every cassette key", def: "chat"},
	{name: "stream", kind: kindBool, usage: "use streamed responses, which survive proxies that cut idle connections during a long answer; the journal is the same"},
	{name: "temperature", usage: "sampling temperature `T`, 0 to 2", def: "", defText: "the provider's"},
	{name: "top-p", usage: "nucleus sampling `P`, 0 to 1", def: "", defText: "the provider's"},
	{name: "seed", usage: "sampling seed `N`, for providers that honour one", def: "", defText: "none sent"},
	{name: "max-completion-tokens", kind: kindInt, usage: "cap `N` on the tokens of one answer, sent as max_completion_tokens (0: none sent); for a server that wants max_tokens, pass --extra-body '{\"max_tokens\": N}'", def: 0},
	{name: "stop", kind: kindStrings, usage: "stop sequence `TEXT` (repeatable)"},
	{name: "reasoning-effort", usage: "reasoning effort `LEVEL` for reasoning models (minimal, low, medium, high)", def: ""},
	{name: "extra-body", usage: "JSON `OBJECT` merged into every request body, for server-specific knobs such as vLLM's top_k", def: ""},
	{name: "request-timeout", kind: kindDuration, usage: "bound on one model request `DURATION`: a server that never answers fails the attempt, which is retried", defText: "5m"},
	{name: "max-retries", kind: kindInt, usage: "retries of a transient provider failure (`N`: timeouts, 408, 409, 429, 5xx, broken connections), with exponential backoff and jitter that honours Retry-After", def: runopts.DefaultMaxRetries},
	{name: "retry-max-wait", kind: kindDuration, usage: "longest wait `DURATION` between retries", defText: "30s"},
	{name: "max-turns", kind: kindInt, usage: "stop after `N` model turns (exit 3, resumable); 0 = no limit", def: runopts.DefaultMaxTurns, unitUsage: "stop each UNIT's run after `N` model turns (exit 3, resumable); 0 = no limit"},
	{name: "max-tool-calls-per-turn", kind: kindInt, usage: "run at most `N` tool calls of one answer; the rest are answered tool_calls_per_turn without running, and calls past twice N are dropped from the answer", def: runopts.DefaultMaxToolCallsPerTurn},
	{name: "timeout", kind: kindDuration, usage: "wall-clock limit `DURATION` for the run, e.g. 10m (exit 3, resumable)", defText: "none", unitUsage: "wall-clock limit `DURATION` for each UNIT's run, e.g. 10m (exit 3, resumable)"},
	{name: "max-tokens", kind: kindInt, usage: "stop after `N` total tokens (exit 3, resumable); 0 = no limit", def: 0, defText: "0, no limit", unitUsage: "stop each UNIT's run after `N` total tokens (exit 3, resumable); 0 = no limit"},
	{name: "artifacts-dir", usage: "`DIR` that holds run directories", def: ".harness/runs"},
	{name: "run-id", usage: "run `ID`", def: "", defText: "a new time-sortable id"},
	{name: "json", kind: kindBool, usage: "stream journal events to stdout as JSONL and nothing else"},
	{name: "record", usage: "record model exchanges into cassette `FILE`", def: ""},
	{name: "replay", usage: "serve model responses from cassette `FILE`: no network, no key", def: ""},
	{name: "quiet", kind: kindBool, usage: "no progress on stderr"},
}

// runCategories group harness run's options in its help, in this order,
// so that flags that work together are read together.
var runCategories = []struct {
	title string
	names []string
}{
	{"Task", []string{"prompt", "prompt-file", "attach", "output-schema", "schema-retries", "allow-empty-answer"}},
	{"Workspace and skills", []string{"workspace", "cwd", "skills-root", "external-skills-root", "skill", "no-skill-catalog", "catalog-budget", "embedding-model", "embedding-cache", "snapshot-cache", "no-snapshot-cache", "skip-eligibility", "allow-drift", "trust-skill", "store"}},
	{"Model", []string{"model", "base-url", "fallback-model", "tier", "price", "wire-api", "stream", "temperature", "top-p", "seed", "max-completion-tokens", "stop", "reasoning-effort", "extra-body", "request-timeout", "max-retries", "retry-max-wait"}},
	{"Tools and what they may do", []string{"allow-tool", "allow-skill-script", "allow-command", "command-grant", "command-cache", "confirm-tool", "protect", "allow-protected-write", "allow-network", "pass-env", "mcp-config", "mcp-tool-effect", "profiles", "honor-allowed-tools"}},
	{"Sandbox", []string{"sandbox", "script-memory-limit", "wasm-memory-limit"}},
	{"Contextual flow control", []string{"cfc-mode", "prompt-role", "fail-on-denial", "cfc-allow-unmediated"}},
	{"Skills a run creates or installs", []string{"approve-created", "forge-min-pass-rate", "reload-created", "reflect", "forge-root", "skill-source", "trusted-source", "approve-installed"}},
	{"Limits", []string{"max-turns", "max-tool-calls-per-turn", "max-tokens", "timeout"}},
	{"Output and run directory", []string{"json", "quiet", "result-file", "output-last-message", "artifacts-dir", "run-id", "record", "replay"}},
}

// runCategory is the help category of run option name.
func runCategory(name string) string {
	for _, c := range runCategories {
		if slices.Contains(c.names, name) {
			return c.title
		}
	}
	return ""
}

// runFlags are harness run's flags: --config and every run option, in
// the order of their categories.
func runFlags() []cli.Flag {
	flags := []cli.Flag{configFlag("the same keys as the flags (flag > env > config > default) and skills")}
	for _, c := range runCategories {
		for _, n := range c.names {
			flags = append(flags, runOption(n).cliFlag())
		}
	}
	for _, o := range runOptions {
		if runCategory(o.name) == "" {
			flags = append(flags, o.cliFlag())
		}
	}
	return flags
}

func runCommand() *cli.Command {
	flags := runFlags()
	return &cli.Command{
		Name:  "run",
		Usage: "run one agent task against an OpenAI-compatible model",
		UsageText: "harness run --workspace W --skills-root W/skills --skill NAME --model M --prompt TEXT\n" +
			"harness run --replay cassette.jsonl --model M --prompt TEXT   (offline)",
		Description: "Resolves the workspace and skill roots, snapshots a digested skill registry, preloads the\n" +
			"named skills as context, and runs the prompt loop. The run directory (default\n" +
			".harness/runs/<run-id>) receives run.json, journal.jsonl, skill-registry.json,\n" +
			"skill-activations.json, skill-resource-reads.json and tool-outputs/. The API key is\n" +
			"read from $HARNESS_API_KEY, then $OPENAI_API_KEY, and is never written anywhere.\n\n" +
			"The final answer is printed on stdout (unless --json); progress goes to stderr.\n" +
			"Exit codes: 0 success, 1 failed, 2 usage or configuration, 3 limit reached, 4 model provider\n" +
			"error, 5 refused by policy, 6 a tool call awaits approval (--confirm-tool, a destructive skill),\n" +
			"130 interrupted.",
		Flags: flags,
		Action: func(ctx context.Context, cmd *cli.Command) error {
			return runAction(ctx, cmd)
		},
	}
}

func runAction(ctx context.Context, cmd *cli.Command) error {
	ro, err := resolveOptions(cmd, runOptions)
	if err != nil {
		return err
	}
	res, err := runResolved(ctx, cmd, ro)
	if err == nil && res != nil && res.ExitCode == 0 && ro.boolean("reflect") {
		reflectAfter(ctx, cmd, ro, res)
	}
	return err
}

// runResolved runs what ro describes and delivers its result and answer
// where the job asked, whatever the outcome.
func runResolved(ctx context.Context, cmd *cli.Command, ro *resolvedOptions) (*run.Result, error) {
	outs, err := outputTargets(ro.str("result-file"), ro.str("output-last-message"))
	if err != nil {
		return nil, err
	}
	res, err := startRun(ctx, cmd, ro, outs)
	if werr := deliver(cmd, res, err, outs); werr != nil && err == nil {
		return res, werr
	}
	return res, err
}

// startRun runs what ro describes; every error before the run begins is
// still an attempt the job's outputs describe.
func startRun(ctx context.Context, cmd *cli.Command, ro *resolvedOptions, outs record.Outputs) (*run.Result, error) {
	if cmd.NArg() > 0 && cmd.Name == "run" {
		return nil, usagef(fmt.Sprintf("unexpected argument %q: pass the task with --prompt TEXT", cmd.Args().First()))
	}
	prompt, promptSource, err := readPrompt(cmd.Root().Reader, ro, cmd)
	if err != nil {
		return nil, err
	}
	key := os.Getenv("HARNESS_API_KEY")
	if key == "" {
		key = os.Getenv("OPENAI_API_KEY")
	}
	memory, err := parseSize("--script-memory-limit", ro.str("script-memory-limit"))
	if err != nil {
		return nil, err
	}
	wasmMemory, err := parseSizeMin("--wasm-memory-limit", ro.str("wasm-memory-limit"), runopts.MinWasmMemoryLimit)
	if err != nil {
		return nil, err
	}
	temperature, err := parseFloat("--temperature", ro.str("temperature"))
	if err != nil {
		return nil, err
	}
	topP, err := parseFloat("--top-p", ro.str("top-p"))
	if err != nil {
		return nil, err
	}
	var seed *int64
	if s := ro.str("seed"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, usagef(fmt.Sprintf("--seed %q: give an integer", s))
		}
		seed = &n
	}
	forgeMin, err := parseFloat("--forge-min-pass-rate", ro.str("forge-min-pass-rate"))
	if err != nil {
		return nil, err
	}
	if ro.boolean("reflect") && !runopts.ForgeAllowed(ro.strs("allow-tool")) {
		// The gate is the reflection's, which reflectAfter hands it to.
		forgeMin = nil
	}
	var schema []byte
	if f := ro.str("output-schema"); f != "" {
		if schema, err = readFlagFile("output-schema", f, maxOperatorFile); err != nil {
			return nil, err
		}
	}
	skillSources, trusted, err := discoverySettings(ro)
	if err != nil {
		return nil, err
	}
	protect := ro.strs("protect")
	if dir, err := protectUserConfig(ro.str("workspace")); err != nil {
		return nil, err
	} else if dir != "" {
		protect = append(slices.Clip(protect), dir)
	}
	opts := run.Options{
		ScriptMemoryLimit:   memory,
		WasmMemoryLimit:     wasmMemory,
		MCPConfig:           ro.str("mcp-config"),
		PassEnv:             ro.strs("pass-env"),
		MCPToolEffects:      ro.strs("mcp-tool-effect"),
		AllowNetwork:        ro.strs("allow-network"),
		ReadOnly:            protect,
		ConfirmTools:        ro.strs("confirm-tool"),
		AllowProtectedWrite: ro.strs("allow-protected-write"),
		FallbackModel:       ro.str("fallback-model"),
		Tiers:               ro.strs("tier"),
		AllowCommands:       ro.strs("allow-command"),
		CommandCache:        ro.str("command-cache"),
		CommandGrant:        ro.str("command-grant"),
		Prices:              ro.strs("price"),
		Stream:              ro.boolean("stream"),
		WireAPI:             ro.str("wire-api"),
		Temperature:         temperature,
		TopP:                topP,
		Seed:                seed,
		MaxCompletionTokens: int64(ro.int("max-completion-tokens")),
		Stop:                ro.strs("stop"),
		ReasoningEffort:     ro.str("reasoning-effort"),
		ExtraBody:           []byte(ro.str("extra-body")),
		RequestTimeout:      ro.dur("request-timeout"),
		MaxRetries:          intPtr(ro.int("max-retries")),
		RetryMaxWait:        ro.dur("retry-max-wait"),
		OutputSchema:        schema,
		SchemaRetries:       ro.int("schema-retries"),
		AllowEmptyAnswer:    ro.boolean("allow-empty-answer"),
		Attach:              ro.strs("attach"),
		Workspace:           ro.str("workspace"),
		Cwd:                 ro.str("cwd"),
		SkillsRoots:         ro.strs("skills-root"),
		ExternalSkillsRoots: ro.strs("external-skills-root"),
		EmbeddingModel:      ro.str("embedding-model"),
		EmbeddingCache:      embeddingCache(ro.str("embedding-cache")),
		SnapshotCache:       snapshotCacheDir(ro.str("snapshot-cache"), ro.boolean("no-snapshot-cache")),
		Skills:              ro.strs("skill"),
		Prompt:              prompt,
		PromptSource:        promptSource,
		Model:               ro.str("model"),
		BaseURL:             ro.str("base-url"),
		APIKey:              key,
		AllowTools:          ro.strs("allow-tool"),
		ApproveCreated:      ro.str("approve-created"),
		ForgeRoot:           ro.str("forge-root"),
		ForgeMinPassRate:    forgeMin,
		EvalDraft:           draftEvaluator,
		LearnedFrom:         ro.str("learned-from"),
		SkillSources:        skillSources,
		TrustedSources:      trusted,
		ApproveInstalled:    ro.str("approve-installed"),
		IndexCache:          indexCache(""),
		SkillsStore:         ro.str("store"),
		ReloadCreated:       ro.boolean("reload-created"),
		NoSkillCatalog:      ro.boolean("no-skill-catalog"),
		CatalogBudget:       ro.int("catalog-budget"),
		AllowDrift:          ro.boolean("allow-drift"),
		AllowSkillScripts:   ro.strs("allow-skill-script"),
		CFCMode:             ro.str("cfc-mode"),
		PromptRole:          ro.str("prompt-role"),
		FailOnDenial:        ro.boolean("fail-on-denial"),
		AllowUnmediated:     ro.boolean("cfc-allow-unmediated"),
		HonorAllowedTools:   ro.boolean("honor-allowed-tools"),
		TrustSkills:         ro.strs("trust-skill"),
		SkipEligibility:     ro.boolean("skip-eligibility"),
		Profiles:            ro.str("profiles"),
		Sandbox:             ro.str("sandbox"),
		MaxTurns:            ro.int("max-turns"),
		MaxToolCallsPerTurn: ro.int("max-tool-calls-per-turn"),
		Timeout:             ro.dur("timeout"),
		MaxTokens:           int64(ro.int("max-tokens")),
		ArtifactsDir:        ro.str("artifacts-dir"),
		RunID:               ro.str("run-id"),
		Record:              ro.str("record"),
		Replay:              ro.str("replay"),
		Sources:             ro.sources,
		ConfigFile:          ro.config,
		Version:             version,
		RunKey:              runKey(),
	}
	opts.Outputs = outs
	jsonOut, quiet := ro.boolean("json"), ro.boolean("quiet")
	stdout, stderr := cmd.Root().Writer, cmd.Root().ErrWriter
	ev := newEvents(cmd, jsonOut, quiet)
	opts.OnEvent, opts.Stderr = ev.render, ev.stderr()
	warnRelativePath(opts.Stderr)
	res, err := run.Run(ctx, opts)
	ev.Close()
	reportResult(stdout, stderr, res, err, jsonOut, quiet)
	return res, err
}

// warnRelativePath says which PATH entries the run's sandboxed programs
// are never looked up in (scripts.LookupBinary skips them), so a command
// that is not found is not a mystery.
func warnRelativePath(w io.Writer) {
	for _, dir := range scripts.RelativePathEntries(os.Getenv("PATH")) {
		fmt.Fprintf(w, "harness: PATH entry %q is relative; programs a run starts are looked up only in absolute PATH entries\n", dir)
	}
}

// reportResult prints the answer on stdout (unless --json, whose stream
// already ended with run.finished) and where the run directory is.
func reportResult(stdout, stderr io.Writer, res *run.Result, err error, jsonOut, quiet bool) {
	if res == nil {
		return
	}
	if err == nil && !jsonOut {
		fmt.Fprintln(stdout, res.Final)
	}
	if !quiet {
		fmt.Fprintf(stderr, "harness: run %s %s (exit %d)\nharness: run directory: %s\n", res.RunID, res.Status, res.ExitCode, res.RunDir)
		if r := res.Record; r != nil && r.ResumeEstimate != "" {
			fmt.Fprintf(stderr, "harness: resume with: %s\n  (%s)\n", r.ResumeCommand, r.ResumeEstimate)
		}
	}
}

func intPtr(n int) *int { return &n }

// parseFloat reads an optional number flag ("" = not set).
func parseFloat(flag, s string) (*float64, error) {
	if s == "" {
		return nil, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, usagef(fmt.Sprintf("%s %q: give a number", flag, s))
	}
	return &f, nil
}

// parseSize reads a script memory cap such as 512MiB, 1GiB or 1000000 (bytes).
func parseSize(flag, s string) (uint64, error) {
	return parseSizeMin(flag, s, runopts.MinScriptMemoryLimit)
}

func parseSizeMin(flag, s string, least uint64) (uint64, error) {
	n, err := runopts.ParseMemoryLimit(s, least)
	if err != nil {
		return 0, usagef(fmt.Sprintf("%s %v", flag, err))
	}
	return n, nil
}

func readPrompt(stdin io.Reader, ro *resolvedOptions, cmd *cli.Command) (string, string, error) {
	text, file := ro.str("prompt"), ro.str("prompt-file")
	for _, f := range []string{"prompt", "prompt-file"} {
		if cmd.Count(f) > 1 {
			return "", "", usagef(fmt.Sprintf("--%s is given %d times: give the task once", f, cmd.Count(f)))
		}
	}
	if text != "" && file != "" {
		return "", "", usagef("--prompt and --prompt-file cannot be used together: pick one")
	}
	switch {
	case file == "-":
		b, err := artifacts.ReadAtMost(stdin, maxPromptBytes)
		if err != nil {
			return "", "", flagFileError("prompt-file", "-", maxPromptBytes, err)
		}
		return string(b), "stdin", nil
	case file != "":
		b, err := readFlagFile("prompt-file", file, maxPromptBytes)
		if err != nil {
			return "", "", err
		}
		return string(b), "file:" + file, nil
	}
	return text, ro.sources["prompt"], nil
}

// embeddingCache is --embedding-cache, or harness's directory in the
// user's cache directory (outside any workspace).
// snapshotCacheDir is --snapshot-cache, or harness's directory in the
// user cache directory; "" with --no-snapshot-cache.
func snapshotCacheDir(dir string, off bool) string {
	if off {
		return ""
	}
	if dir != "" {
		return dir
	}
	// By default only where a user cache directory can exist: a CI job
	// without a home directory runs without a cache, silently.
	if base, err := os.UserCacheDir(); err == nil {
		if _, err := os.Stat(filepath.Dir(base)); err == nil {
			return filepath.Join(base, "harness", "snapshots")
		}
	}
	return ""
}

func embeddingCache(dir string) string {
	if dir != "" {
		return dir
	}
	if base, err := os.UserCacheDir(); err == nil {
		return filepath.Join(base, "harness", "embeddings")
	}
	return ""
}
