package runopts

import (
	"cmp"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/record"
)

// PolicyDigest covers what the operator allowed and how the prompt is
// trusted: tools, scripts, the sandbox asked for, the CFC mode and role,
// and whether drift and ineligible skills are accepted. profiles is the
// --profiles content as the run read it: what delegate_task can start
// counts by content, not by the file's name.
func (o *Options) PolicyDigest(profiles []byte) artifacts.Digest {
	h := artifacts.NewHasher()
	h.WriteField("harness.policy/2")
	for _, t := range o.AllowTools {
		h.WriteField("tool:" + t)
	}
	for _, s := range o.AllowSkillScripts {
		h.WriteField("script:" + s)
	}
	for _, c := range o.AllowCommands {
		h.WriteField("command:" + c)
	}
	if o.CommandGrant != "" {
		// What commands may touch, by the file's content.
		h.WriteField("command-grant:" + string(o.CommandGrantDigest()))
	}
	h.WriteField("sandbox:" + o.Sandbox)
	for _, t := range o.Tiers {
		// Which model a tier's work runs on.
		h.WriteField("tier:" + t)
	}
	if o.EmbeddingModel != "" {
		// It decides what find_skills shows the model.
		h.WriteField("embedding-model:" + o.EmbeddingModel)
	}
	h.WriteField(fmt.Sprint("script-memory:", o.ScriptMemoryLimit))
	if o.Profiles != "" {
		h.WriteField("profiles:" + string(artifacts.DigestBytes(profiles)))
	}
	if o.MCPConfig != "" || len(o.PassEnv)+len(o.MCPToolEffects) > 0 {
		// What servers start, with which of the operator's variables, and
		// how their tools are policed. The file's content counts, not its
		// name, as this invocation read it.
		h.WriteField("mcp-config:" + string(o.MCPFileDigest()))
		for _, n := range o.PassEnv {
			h.WriteField("pass-env:" + n)
		}
		for _, e := range o.MCPToolEffects {
			h.WriteField("mcp-effect:" + e)
		}
	}
	for _, n := range o.AllowNetwork {
		h.WriteField("network:" + n)
	}
	// What skill code and write_file may never write, and the exceptions.
	for _, p := range AbsAll(o.ReadOnly) {
		h.WriteField("protect:" + p)
	}
	for _, p := range AbsAll(o.AllowProtectedWrite) {
		h.WriteField("allow-protected-write:" + p)
	}
	// Which calls wait for a person.
	for _, p := range o.ConfirmTools {
		h.WriteField("confirm-tool:" + p)
	}
	if o.WasmMemoryLimit != 0 {
		h.WriteField(fmt.Sprint("wasm-memory:", o.WasmMemoryLimit))
	}
	if StoresSkills(o.AllowTools) {
		// Where created or installed skills go and who must approve them.
		h.WriteField(fmt.Sprint("forge:", o.ApproveCreated, "\x00", o.ForgeRoot, "\x00", o.SkillsStore, "\x00", o.ReloadCreated))
		if o.ForgeMinPassRate != nil {
			// Whether a draft's own evals can hold it back from going live.
			h.WriteField(fmt.Sprint("forge-min-pass-rate:", *o.ForgeMinPassRate))
		}
	}
	if DiscoveryAllowed(o.AllowTools) {
		// Which indexes the model searches and installs from, and how far
		// an install goes without a person.
		h.WriteField(fmt.Sprint("discovery:", strings.Join(o.SkillSources, "\x00"), "\x01", strings.Join(o.TrustedSources, "\x00"), "\x01", o.ApproveInstalled))
	}
	h.WriteField("cfc:" + o.CFCMode)
	// The prompt's role decides what enforce-explicit allows: a run
	// resumed under another role would be policed differently.
	h.WriteField("role:" + o.PromptRole)
	h.WriteField(fmt.Sprint("cfc-flags:", o.FailOnDenial, o.AllowUnmediated, o.HonorAllowedTools))
	for _, s := range o.TrustSkills {
		h.WriteField("trust:" + s)
	}
	h.WriteField(fmt.Sprint("drift:", o.AllowDrift))
	h.WriteField(fmt.Sprint("skip-eligibility:", o.SkipEligibility))
	h.WriteField(fmt.Sprint("answer:", o.AllowEmptyAnswer, o.SchemaRetries))
	return h.Digest()
}

// Wire is the run's wire API, named: chat unless responses was asked.
func (o *Options) Wire() string { return cmp.Or(o.WireAPI, loop.WireChat) }

// Params are the generation parameters sent with every request.
func (o *Options) Params() loop.Params {
	return loop.Params{
		Temperature: o.Temperature, TopP: o.TopP, Seed: o.Seed,
		MaxCompletionTokens: o.MaxCompletionTokens, Stop: o.Stop, ReasoningEffort: o.ReasoningEffort,
		ExtraBody: o.ExtraBody, ResponseSchema: o.OutputSchema,
	}
}

// Limits are the run's limits as recorded.
func (o *Options) Limits() record.Limits {
	l := record.Limits{MaxTurns: o.MaxTurns, MaxTokens: o.MaxTokens, MaxToolCallsPerTurn: o.MaxToolCallsPerTurn}
	if o.Timeout > 0 {
		l.Timeout = o.Timeout.String()
	}
	return l
}

// Forge records the SkillForge settings when its tools are allowed (Check
// made their paths absolute).
func (o *Options) Forge() *record.ForgeInputs {
	if !StoresSkills(o.AllowTools) {
		return nil
	}
	return &record.ForgeInputs{ApproveCreated: o.ApproveCreated, Root: o.ForgeRoot, Store: o.SkillsStore, ReloadCreated: o.ReloadCreated, MinPassRate: o.ForgeMinPassRate}
}

// Discovery records the discovery tools' settings when one is allowed.
func (o *Options) Discovery() *record.DiscoveryInputs {
	if !DiscoveryAllowed(o.AllowTools) {
		return nil
	}
	return &record.DiscoveryInputs{Sources: nonNilStrings(o.SkillSources), TrustedSources: nonNilStrings(o.TrustedSources), ApproveInstalled: o.ApproveInstalled}
}

func nonNilStrings(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return xs
}

// OperatorValues are the values the operator gave one by one that a tool
// call may carry as an argument: each --allow-skill-script entry, its
// skill and its path (run_skill_script's arguments), and each --attach
// file as given and by the name its frame shows the model.
func (o *Options) OperatorValues() []string {
	var out []string
	for _, e := range o.AllowSkillScripts {
		skill, script, _ := strings.Cut(e, ":")
		out = append(out, e, skill, script)
	}
	for _, a := range o.Attach {
		out = append(out, a, filepath.Base(a))
	}
	// An argv equal to an exact --allow-command is the operator's own.
	patterns, _ := CommandPatterns(o.AllowCommands)
	for _, p := range patterns {
		if words, exact := p.Exact(); exact {
			out = append(out, words...)
		}
	}
	return out
}

// Abs is p as recorded: absolute, "" for none (or one that cannot be
// made absolute).
func Abs(p string) string {
	if p == "" {
		return ""
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return ""
	}
	return abs
}

// AbsAll makes operator paths absolute, as they are recorded.
func AbsAll(ps []string) []string {
	var out []string
	for _, p := range ps {
		out = append(out, Abs(p))
	}
	return out
}
