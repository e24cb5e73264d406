package runopts

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/harness-dev/harness/cfc"
	"github.com/harness-dev/harness/discovery"
	"github.com/harness-dev/harness/egress"
	"github.com/harness-dev/harness/forge"
	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/mcp"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/store"
	"github.com/harness-dev/harness/tools"
)

// Check refuses what is wrong with the options alone, before anything
// touches the disk, and settles their defaults (the sandbox, the CFC mode
// and role, duplicates dropped, JSON compacted, the --mcp-config file
// read once). modelGiven says the caller hands the run a model, so that
// no key or endpoint is needed.
func Check(o *Options, modelGiven bool) error {
	if strings.TrimSpace(o.Prompt) == "" {
		return outcome.Usage("prompt_empty", "the prompt is empty: pass --prompt TEXT or --prompt-file FILE (- reads standard input)")
	}
	if len(o.Skills) > 0 && len(o.SkillsRoots)+len(o.ExternalSkillsRoots) == 0 {
		return outcome.Usage("skill_requires_root", "--skill requires --skills-root DIR: say where the skills live")
	}
	if o.Model == "" {
		return outcome.Usage("model_missing", "no model: pass --model NAME (or set HARNESS_MODEL)")
	}
	if o.Record != "" && o.Replay != "" {
		return outcome.Usage("cassette_conflict", "--record and --replay cannot be used together: record against a live model, replay offline")
	}
	// A keyless endpoint (a local vLLM, llama.cpp, Ollama) is named with
	// --base-url; only the default, OpenAI's, needs a key to be useful.
	if o.Replay == "" && o.APIKey == "" && !modelGiven && o.BaseURL == "" {
		return outcome.Usage("api_key_missing", "no API key: set HARNESS_API_KEY (or OPENAI_API_KEY) to call the model, pass --base-url URL for an endpoint that needs none, or pass --replay FILE to run offline from a recorded cassette")
	}
	if o.MaxTurns < 0 || o.MaxTokens < 0 || o.Timeout < 0 {
		return outcome.Usage("limit_invalid", "limits must not be negative (--max-turns, --max-tokens, --timeout)")
	}
	if o.MaxRetries != nil {
		if err := CheckMaxRetries(*o.MaxRetries); err != nil {
			return err
		}
	}
	if o.MaxToolCallsPerTurn < 0 || o.MaxToolCallsPerTurn > maxToolCallsPerTurn {
		return outcome.Usage("limit_invalid", "--max-tool-calls-per-turn %d: give a number from 1 to %d (default %d)", o.MaxToolCallsPerTurn, maxToolCallsPerTurn, DefaultMaxToolCallsPerTurn)
	}
	if o.MaxToolCallsPerTurn == 0 {
		o.MaxToolCallsPerTurn = DefaultMaxToolCallsPerTurn
	}
	o.AllowSkillScripts = dedupe(o.AllowSkillScripts)
	if len(o.AllowSkillScripts) > 0 && len(o.SkillsRoots)+len(o.ExternalSkillsRoots) == 0 {
		return outcome.Usage("script_allow_requires_root", "--allow-skill-script requires --skills-root DIR")
	}
	for _, e := range o.AllowSkillScripts {
		if _, _, err := tools.ParseScriptAllow(e); err != nil {
			return err
		}
	}
	switch o.Sandbox {
	case "":
		o.Sandbox = "auto"
	case "auto", "bwrap", "landlock", "none":
	default:
		return outcome.Usage("sandbox_invalid", "--sandbox %q: use auto, bwrap, landlock or none", o.Sandbox)
	}
	if o.CFCMode == "" {
		o.CFCMode = string(cfc.ModeEnforceExplicit)
	}
	if _, ok := cfc.ParseMode(o.CFCMode); !ok {
		return outcome.Usage("cfc_mode_invalid", "--cfc-mode %q: use disabled, observe, enforce-explicit or enforce-strict", o.CFCMode)
	}
	if o.PromptRole == "" {
		o.PromptRole = string(cfc.RoleDirectCommand)
	}
	if _, ok := cfc.ParseRole(o.PromptRole); !ok {
		return outcome.Usage("prompt_role_invalid", "--prompt-role %q: use direct-command, context or quote", o.PromptRole)
	}
	o.TrustSkills = dedupe(o.TrustSkills)
	if err := checkDiscovery(o); err != nil {
		return err
	}
	if err := checkForge(o); err != nil {
		return err
	}
	if slices.Contains(o.AllowTools, tools.DelegateToolName) && o.Profiles == "" {
		return outcome.Usage("profiles_missing", "--allow-tool delegate_task needs --profiles FILE with the subagent profiles")
	}
	if err := checkParams(o); err != nil {
		return err
	}
	if _, err := TierMap(o.Tiers); err != nil {
		return err
	}
	if _, err := PriceMap(o.Prices); err != nil {
		return err
	}
	if o.BaseURL != "" {
		if err := CheckBaseURL(o.BaseURL); err != nil {
			return err
		}
	}
	o.Skills = dedupe(o.Skills)
	if err := checkTools(o); err != nil {
		return err
	}
	o.AllowCommands = dedupe(o.AllowCommands)
	if _, err := CommandPatterns(o.AllowCommands); err != nil {
		return err
	}
	switch toolAllowed := slices.Contains(o.AllowTools, tools.CommandToolName); {
	case toolAllowed && len(o.AllowCommands) == 0:
		return outcome.Usage("allow_command_missing", "--allow-tool run_command needs at least one --allow-command PATTERN: the exact commands (\"go test ./...\") or prefixes (\"go test *\") it may run")
	case !toolAllowed && len(o.AllowCommands) > 0:
		return outcome.Usage("allow_command_unused", "--allow-command is given but run_command is not allowed: add --allow-tool run_command")
	}
	if err := o.ReadCommandGrant(); err != nil {
		return err
	}
	if o.CommandGrant != "" && !slices.Contains(o.AllowTools, tools.CommandToolName) {
		return outcome.Usage("command_grant_unused", "--command-grant is given but run_command is not allowed: add --allow-tool run_command")
	}
	if o.CommandCache != "" {
		abs, err := filepath.Abs(o.CommandCache)
		if err == nil {
			err = os.MkdirAll(abs, 0o700)
		}
		if err != nil {
			return outcome.Usage("command_cache_invalid", "--command-cache %s: %v", o.CommandCache, err)
		}
		o.CommandCache = abs
	}
	o.AllowNetwork = dedupe(o.AllowNetwork)
	if _, err := egress.ParseRules(o.AllowNetwork); err != nil {
		return outcome.Usage("allow_network_invalid", "--allow-network: %v; give host or host:port (a name as the skill declares it, or an IP address)", err)
	}
	return o.ReadMCPFile()
}

// CheckWireAPI refuses a wire API harness does not speak.
func CheckWireAPI(w string) error {
	if w != "" && !slices.Contains(loop.WireAPIs, w) {
		return outcome.Usage("wire_api_invalid", "--wire-api %q: use chat (Chat Completions) or responses (the Responses API)", w)
	}
	return nil
}

// checkParams checks the generation parameters and the answer's schema,
// compacting the JSON ones so that their digests do not depend on spacing.
func checkParams(o *Options) error {
	if err := CheckWireAPI(o.WireAPI); err != nil {
		return err
	}
	if o.WireAPI == loop.WireResponses {
		// The Responses API has no such fields; dropping them would run
		// something other than what was asked.
		switch {
		case len(o.Stop) > 0:
			return outcome.Usage("wire_api_param", "--stop is not part of the Responses API: drop it, or use --wire-api chat")
		case o.Seed != nil:
			return outcome.Usage("wire_api_param", "--seed is not part of the Responses API: drop it, or use --wire-api chat")
		}
	}
	if o.Temperature != nil && (*o.Temperature < 0 || *o.Temperature > 2) {
		return outcome.Usage("temperature_invalid", "--temperature %v must be between 0 and 2", *o.Temperature)
	}
	if o.TopP != nil && (*o.TopP <= 0 || *o.TopP > 1) {
		return outcome.Usage("top_p_invalid", "--top-p %v must be more than 0 and at most 1", *o.TopP)
	}
	if o.MaxCompletionTokens < 0 {
		return outcome.Usage("max_completion_tokens_invalid", "--max-completion-tokens must not be negative")
	}
	if len(o.ExtraBody) == 0 {
		o.ExtraBody = nil
	}
	if len(o.ExtraBody) > 0 {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(o.ExtraBody, &obj); err != nil {
			return outcome.Usage("extra_body_invalid", "--extra-body must be a JSON object, e.g. '{\"top_k\": 20}': %v", err)
		}
		if !utf8.Valid(o.ExtraBody) {
			return outcome.Usage("extra_body_invalid", "--extra-body must be UTF-8 text: JSON sent to an endpoint is")
		}
		if err := checkExtraBody(obj, o.WireAPI); err != nil {
			return err
		}
		var buf bytes.Buffer
		json.Compact(&buf, o.ExtraBody)
		o.ExtraBody = buf.Bytes()
	}
	if o.SchemaRetries < 0 {
		return outcome.Usage("schema_retries_invalid", "--schema-retries must not be negative")
	}
	if len(o.OutputSchema) > 0 {
		var buf bytes.Buffer
		if err := json.Compact(&buf, o.OutputSchema); err != nil {
			return outcome.Usage("output_schema_invalid", "--output-schema is not JSON: %v", err)
		}
		o.OutputSchema = buf.Bytes()
		if _, err := loop.NewSchemaCheck(o.OutputSchema); err != nil {
			return outcome.Usage("output_schema_invalid", "--output-schema: %v", err)
		}
	}
	if o.CatalogBudget < 0 {
		return outcome.Usage("catalog_budget_invalid", "--catalog-budget must be a positive number of characters")
	}
	return nil
}

// checkTools checks the tool names the operator allowed and what MCP
// servers may be given.
func checkTools(o *Options) error {
	o.AllowTools = dedupe(o.AllowTools)
	for _, t := range o.AllowTools {
		if strings.Contains(t, tools.MCPSeparator) {
			continue // an MCP server's tool: known once the server lists it
		}
		if !slices.Contains(tools.Names, t) {
			return outcome.Usage("tool_unknown", "--allow-tool %s: unknown tool; known tools: %s, and MCP tools as KEY__TOOL or KEY__*", t, strings.Join(tools.Names, ", "))
		}
	}
	if err := checkConfirmTools(o); err != nil {
		return err
	}
	if _, err := tools.ParseToolEffects(o.MCPToolEffects); err != nil {
		return err
	}
	for _, n := range o.PassEnv {
		if !mcp.IsEnvName(n) {
			return outcome.Usage("pass_env_invalid", "--pass-env %q: give an environment variable name", n)
		}
		if n == "HARNESS_API_KEY" || n == "OPENAI_API_KEY" || n == "HARNESS_RUN_KEY" {
			return outcome.Usage("pass_env_refused", "--pass-env %s: harness's own secrets are never passed to a server", n)
		}
	}
	return nil
}

// maxRetries bounds --max-retries: more would wait for hours at the
// longest --retry-max-wait, and one more than it must not wrap round.
const maxRetries = 100

// maxToolCallsPerTurn bounds --max-tool-calls-per-turn: an answer keeps
// twice as many calls, each recorded.
const maxToolCallsPerTurn = 4096

// CheckMaxRetries refuses a retry count out of range.
func CheckMaxRetries(n int) error {
	if n < 0 || n > maxRetries {
		return outcome.Usage("limit_invalid", "--max-retries %d: give a number from 0 to %d", n, maxRetries)
	}
	return nil
}

// CheckBaseURL refuses an endpoint that is not an http(s) URL.
func CheckBaseURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// Not the value itself: it may carry credentials or a gateway's
		// key in its query string.
		return outcome.Usage("base_url_invalid", "--base-url must be an http(s) URL such as https://api.openai.com/v1 (the value given is not shown: it may hold credentials)")
	}
	return nil
}

func dedupe(xs []string) []string {
	var out []string
	for _, x := range xs {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// checkForge settles the SkillForge options when its tools are allowed:
// the approval tier, and absolute paths for the forge root and store.
func checkForge(o *Options) error {
	if r := o.ForgeMinPassRate; r != nil && (*r < 0 || *r > 1 || *r != *r) {
		return outcome.Usage("forge_min_pass_rate_invalid", "--forge-min-pass-rate %g: give a number from 0 to 1", *r)
	}
	if o.ForgeMinPassRate != nil && !ForgeAllowed(o.AllowTools) {
		return outcome.Usage("forge_min_pass_rate_unused", "--forge-min-pass-rate needs --allow-tool create_skill or compose_skills: it gates the drafts they write")
	}
	if !StoresSkills(o.AllowTools) {
		if o.ReloadCreated {
			return outcome.Usage("reload_created_unused", "--reload-created needs --allow-tool create_skill, compose_skills or install_skill")
		}
		return nil
	}
	if o.ApproveCreated == "" {
		o.ApproveCreated = "low"
	}
	if _, err := forge.ParseApproval(o.ApproveCreated); err != nil {
		return err
	}
	if o.ForgeRoot == "" && len(o.SkillsRoots) == 0 {
		tool := tools.InstallSkillName
		for _, t := range []string{tools.CreateSkillName, tools.ComposeSkillsName} {
			if slices.Contains(o.AllowTools, t) {
				tool = t
				break
			}
		}
		return outcome.Usage("forge_root_missing", "--allow-tool %s needs a root for the skills it promotes: give --skills-root or --forge-root", tool)
	}
	if o.SkillsStore == "" {
		o.SkillsStore = store.DefaultStoreDir
	}
	for _, p := range []*string{&o.ForgeRoot, &o.SkillsStore} {
		if *p == "" {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return outcome.Usage("forge_path_invalid", "%s: %v", *p, err)
		}
		*p = abs
	}
	return nil
}

// StoresSkills reports whether a tool that adds skills through the store
// (SkillForge's, or install_skill) is allowed.
func StoresSkills(allow []string) bool {
	return ForgeAllowed(allow) || slices.Contains(allow, tools.InstallSkillName)
}

// DiscoveryAllowed reports whether discover_skills or install_skill is.
func DiscoveryAllowed(allow []string) bool {
	return slices.Contains(allow, tools.DiscoverSkillsName) || slices.Contains(allow, tools.InstallSkillName)
}

// SkillSources reads the --skill-source entries, NAME=URL.
func SkillSources(entries []string) ([]discovery.Source, error) {
	var out []discovery.Source
	for _, e := range entries {
		name, u, ok := strings.Cut(e, "=")
		name, u = strings.TrimSpace(name), strings.TrimSpace(u)
		if !ok || name == "" || u == "" || name == discovery.FromLocal || name == "all" {
			return nil, outcome.Usage("skill_source_invalid", "--skill-source %q: give NAME=URL (a skill index's URL or file; NAME neither local nor all)", e)
		}
		if slices.ContainsFunc(out, func(s discovery.Source) bool { return s.Name == name }) {
			return nil, outcome.Usage("skill_source_invalid", "--skill-source %s is given twice", name)
		}
		out = append(out, discovery.Source{Name: name, URL: u})
	}
	return out, nil
}

// checkDiscovery settles discover_skills and install_skill: sources that
// parse, at least one for install_skill, and the approval tier.
func checkDiscovery(o *Options) error {
	if !DiscoveryAllowed(o.AllowTools) {
		if len(o.SkillSources) > 0 {
			return outcome.Usage("skill_source_unused", "--skill-source is given but neither discover_skills nor install_skill is allowed: add --allow-tool discover_skills")
		}
		return nil
	}
	sources, err := SkillSources(o.SkillSources)
	if err != nil {
		return err
	}
	if !slices.Contains(o.AllowTools, tools.InstallSkillName) {
		return nil
	}
	if len(sources) == 0 {
		return outcome.Usage("skill_source_missing", "--allow-tool install_skill needs at least one --skill-source NAME=URL (or skills.sources in the config file): skills are installed only from indexes you configured")
	}
	if o.ApproveInstalled == "" {
		o.ApproveInstalled = "low"
	}
	_, err = store.ParseApproval("--approve-installed", o.ApproveInstalled)
	return err
}

// ForgeAllowed reports whether a SkillForge tool is allowed.
func ForgeAllowed(allow []string) bool {
	return slices.Contains(allow, tools.CreateSkillName) || slices.Contains(allow, tools.ComposeSkillsName)
}

// CommandPatterns reads the --allow-command entries.
func CommandPatterns(entries []string) ([]tools.CommandPattern, error) {
	var out []tools.CommandPattern
	for _, e := range entries {
		p, err := tools.ParseCommandPattern(e)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// ownedInstead names the flag to use instead of an extra body key harness
// sends itself (loop.OwnedBody), where there is one.
var ownedInstead = map[string]string{
	"model": "--model", "tools": "--allow-tool", "functions": "--allow-tool",
	"stream": "--stream", "stream_options": "--stream",
}

// checkExtraBody refuses a key of --extra-body that is not a plain field
// name (it would be read as a JSON path into the body) or that harness
// sends itself.
// CheckExtraBody holds an extra body given anywhere (a pipeline's or a
// batch's defaults, as --extra-body) to --extra-body's rules: a JSON
// object of UTF-8 text whose keys are plain and not harness's own over
// wire ("" is chat).
func CheckExtraBody(raw []byte, wire string) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return outcome.Usage("extra_body_invalid", "--extra-body must be a JSON object, e.g. '{\"top_k\": 20}': %v", err)
	}
	if !utf8.Valid(raw) {
		return outcome.Usage("extra_body_invalid", "--extra-body must be UTF-8 text: JSON sent to an endpoint is")
	}
	return checkExtraBody(obj, wire)
}

func checkExtraBody(obj map[string]json.RawMessage, wire string) error {
	if wire == "" {
		wire = loop.WireChat
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !loop.ExtraBodyKeyPlain(k) {
			return outcome.Usage("extra_body_key_invalid", "--extra-body key %q is not a plain field name: use only letters, digits, _ and -; a key names one top-level field of the request body, never a path into it", k)
		}
		if !loop.ExtraBodyOwned(wire, k) {
			continue
		}
		msg := fmt.Sprintf("--extra-body sets %q, which harness sends itself over the %s wire API", k, wire)
		if instead := ownedInstead[strings.ToLower(k)]; instead != "" {
			msg += "; use " + instead + " instead"
		}
		return outcome.Usage("extra_body_owned", "%s. --extra-body is for a server's own knobs, such as '{\"top_k\": 20}'", msg)
	}
	return nil
}
