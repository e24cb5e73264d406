package run

import (
	"path/filepath"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/resolve"
	"github.com/harness-dev/harness/runopts"
	"github.com/harness-dev/harness/skills"
	"github.com/harness-dev/harness/workspace"
)

// inputsOf writes down the options that shape a run, resolved (absolute
// host paths), for run.json. optionsOf below is its inverse: resume
// restores a run from these alone, so the two are kept side by side and a
// test round-trips every field of Options through them.
func inputsOf(o Options, lin lineage, res resolved) record.Inputs {
	roots := make([]record.PathPair, len(res.skillsRoots))
	for i, root := range res.skillsRoots {
		roots[i] = record.PathPair{Host: root, Sandbox: resolve.SandboxPath(res.workspace, root)}
	}
	var external []record.PathPair
	for i, label := range skills.ExternalLabels(res.externalRoots) {
		external = append(external, record.PathPair{Host: res.externalRoots[i], Sandbox: skills.ExternalSandboxBase + "/" + label})
	}
	return record.Inputs{
		Workspace:           record.PathPair{Host: res.workspace, Sandbox: workspace.DefaultSandbox},
		Cwd:                 res.cwd,
		SkillsRoots:         roots,
		ExternalSkillsRoots: external,
		Protect:             o.Protect,
		EmbeddingModel:      o.EmbeddingModel,
		Forge:               o.Forge(),
		Discovery:           o.Discovery(),
		LearnedFrom:         o.LearnedFrom,
		Skills:              nonNil(o.Skills),
		Model:               o.Model,
		BaseURL:             artifacts.NewRedactor(append([]string{o.APIKey}, artifacts.URLSecrets(o.BaseURL)...)...).String(artifacts.EndpointOf(o.BaseURL)),
		PromptSource:        o.PromptSource,
		Prompt:              o.Prompt,
		PromptDigest:        artifacts.DigestString(o.Prompt),
		PromptRole:          o.PromptRole,
		AllowTools:          nonNil(o.AllowTools),
		AllowScripts:        nonNil(o.AllowSkillScripts),
		NoCatalog:           o.NoSkillCatalog,
		CatalogBudget:       o.CatalogBudget,
		AllowDrift:          o.AllowDrift,
		SkipEligibility:     o.SkipEligibility,
		CFC: record.CFCRecord{Mode: o.CFCMode, FailOnDenial: o.FailOnDenial, AllowUnmediated: o.AllowUnmediated,
			HonorAllowedTools: o.HonorAllowedTools, TrustSkills: nonNil(o.TrustSkills)},
		Profiles:            runopts.Abs(o.Profiles),
		ProfilesDigest:      profilesDigest(o, lin),
		Depth:               lin.depth,
		MaxDepth:            lin.maxDepth,
		ActivationSource:    lin.activationSource,
		Sandbox:             &record.SandboxRecord{Requested: o.Sandbox},
		AllowCommands:       o.AllowCommands,
		CommandGrant:        runopts.Abs(o.CommandGrant),
		CommandGrantDigest:  o.CommandGrantDigest(),
		Tiers:               o.Tiers,
		Prices:              o.Prices,
		ScriptMemoryLimit:   o.ScriptMemoryLimit,
		WasmMemoryLimit:     o.WasmMemoryLimit,
		MCPConfig:           runopts.Abs(o.MCPConfig),
		MCPConfigDigest:     o.MCPFileDigest(),
		PassEnv:             o.PassEnv,
		MCPToolEffects:      o.MCPToolEffects,
		AllowNetwork:        o.AllowNetwork,
		ConfirmTools:        o.ConfirmTools,
		ReadOnly:            runopts.AbsAll(o.ReadOnly),
		AllowProtectedWrite: runopts.AbsAll(o.AllowProtectedWrite),
		WireAPI:             o.Wire(),
		Params: loop.Params{Temperature: o.Temperature, TopP: o.TopP, Seed: o.Seed, MaxCompletionTokens: o.MaxCompletionTokens,
			Stop: o.Stop, ReasoningEffort: o.ReasoningEffort, ExtraBody: o.ExtraBody},
		OutputSchema:     o.OutputSchema,
		SchemaRetries:    o.SchemaRetries,
		AllowEmptyAnswer: o.AllowEmptyAnswer,
		Attachments:      res.attachments,
		Tools:            []string{},
		Limits:           o.Limits(),
		Record:           o.Record,
		Replay:           o.Replay,
		ArtifactsDir:     filepath.Dir(res.runDir),
	}
}

// optionsOf is the inverse of inputsOf: the options (and lineage) a
// resume continues with. What the operator gives on the resume itself
// (key, cassette, limits, clock) is added by the caller.
func optionsOf(in record.Inputs, sources record.Sources) (Options, lineage) {
	roots := make([]string, len(in.SkillsRoots))
	for i, p := range in.SkillsRoots {
		roots[i] = p.Host
	}
	var external []string
	for _, p := range in.ExternalSkillsRoots {
		external = append(external, p.Host)
	}
	o := Options{
		Workspace: in.Workspace.Host, Cwd: in.Cwd, SkillsRoots: roots, ExternalSkillsRoots: external, Protect: in.Protect, EmbeddingModel: in.EmbeddingModel, Skills: in.Skills,
		Prompt: in.Prompt, PromptSource: in.PromptSource, PromptRole: in.PromptRole,
		Model: in.Model, WireAPI: in.WireAPI, BaseURL: in.BaseURL, Tiers: in.Tiers, Prices: in.Prices, AllowCommands: in.AllowCommands, CommandGrant: in.CommandGrant,
		AllowTools: in.AllowTools, AllowSkillScripts: in.AllowScripts, Sandbox: "auto", ScriptMemoryLimit: in.ScriptMemoryLimit, WasmMemoryLimit: in.WasmMemoryLimit,
		MCPConfig: in.MCPConfig, PassEnv: in.PassEnv, MCPToolEffects: in.MCPToolEffects, AllowNetwork: in.AllowNetwork,
		ReadOnly: in.ReadOnly, AllowProtectedWrite: in.AllowProtectedWrite, ConfirmTools: in.ConfirmTools,
		OutputSchema: in.OutputSchema, SchemaRetries: in.SchemaRetries, AllowEmptyAnswer: in.AllowEmptyAnswer,
		Temperature: in.Params.Temperature, TopP: in.Params.TopP, Seed: in.Params.Seed, MaxCompletionTokens: in.Params.MaxCompletionTokens,
		Stop: in.Params.Stop, ReasoningEffort: in.Params.ReasoningEffort, ExtraBody: in.Params.ExtraBody,
		NoSkillCatalog: in.NoCatalog, CatalogBudget: in.CatalogBudget,
		AllowDrift: in.AllowDrift, SkipEligibility: in.SkipEligibility,
		CFCMode: in.CFC.Mode, FailOnDenial: in.CFC.FailOnDenial, AllowUnmediated: in.CFC.AllowUnmediated,
		HonorAllowedTools: in.CFC.HonorAllowedTools, TrustSkills: in.CFC.TrustSkills,
		MaxTurns: in.Limits.MaxTurns, MaxTokens: in.Limits.MaxTokens, MaxToolCallsPerTurn: in.Limits.MaxToolCallsPerTurn,
		ArtifactsDir: in.ArtifactsDir,
		Record:       in.Record, Replay: in.Replay,
		Sources: sources.Values, ConfigFile: sources.ConfigFile,
		ApproveCreated:   forgeField(in.Forge, func(f *record.ForgeInputs) string { return f.ApproveCreated }),
		LearnedFrom:      in.LearnedFrom,
		SkillSources:     discoveryField(in.Discovery, func(d *record.DiscoveryInputs) []string { return d.Sources }),
		TrustedSources:   discoveryField(in.Discovery, func(d *record.DiscoveryInputs) []string { return d.TrustedSources }),
		ForgeRoot:        forgeField(in.Forge, func(f *record.ForgeInputs) string { return f.Root }),
		SkillsStore:      forgeField(in.Forge, func(f *record.ForgeInputs) string { return f.Store }),
		ReloadCreated:    in.Forge != nil && in.Forge.ReloadCreated,
		ForgeMinPassRate: forgeMinPassRate(in.Forge),
		Profiles:         in.Profiles,
	}
	if in.Sandbox != nil {
		o.Sandbox = in.Sandbox.Requested
	}
	for _, a := range in.Attachments {
		o.Attach = append(o.Attach, a.Path)
	}
	if in.Discovery != nil {
		o.ApproveInstalled = in.Discovery.ApproveInstalled
	}
	return o, lineage{depth: in.Depth, maxDepth: in.MaxDepth, activationSource: in.ActivationSource}
}

// profilesDigest is the digest of the --profiles content this invocation
// read ("" when there is no file).
func profilesDigest(o Options, lin lineage) artifacts.Digest {
	if o.Profiles == "" {
		return ""
	}
	return artifacts.DigestBytes(lin.profiles)
}

func nonNil(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return xs
}

func forgeField(f *record.ForgeInputs, get func(*record.ForgeInputs) string) string {
	if f == nil {
		return ""
	}
	return get(f)
}

func forgeMinPassRate(f *record.ForgeInputs) *float64 {
	if f == nil {
		return nil
	}
	return f.MinPassRate
}

func discoveryField(d *record.DiscoveryInputs, get func(*record.DiscoveryInputs) []string) []string {
	if d == nil {
		return nil
	}
	return get(d)
}

// outputsOf is what run.json and run.created record of o: nothing when the
// caller delivers nothing.
func outputsOf(o record.Outputs) *record.Outputs {
	if o == (record.Outputs{}) {
		return nil
	}
	return &o
}
