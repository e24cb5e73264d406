package run

import (
	"encoding/json"
	"fmt"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/record"
)

// identityOf computes the run identity: what the run asks and under which
// policy. Run seals it at start; resume recomputes it and compares.
func (r *runner) identityOf(tools []loop.Tool) (record.Identity, error) {
	td, err := toolsDigest(tools)
	if err != nil {
		return record.Identity{}, err
	}
	id := record.Identity{
		HarnessVersion: r.opts.Version,
		Model:          r.opts.Model,
		Params:         r.params(),
		PromptDigest:   artifacts.DigestString(r.opts.Prompt),
		PromptRole:     r.opts.PromptRole,
		ToolsDigest:    td,
		PolicyDigest:   policyDigest(r.opts),
		Limits:         r.manifest.Inputs.Limits,
		Skills:         nonNil(r.opts.Skills),
		SkillDigests:   r.acts.Digests(),
	}
	if r.registry != nil {
		id.RegistryDigest = r.registry.Digest
	}
	for _, a := range r.res.attachments {
		id.Attachments = append(id.Attachments, a.Digest)
	}
	return id, id.Seal()
}

// params are the generation parameters sent with every request.
func (r *runner) params() loop.Params {
	return loop.Params{
		Temperature: r.opts.Temperature, TopP: r.opts.TopP, Seed: r.opts.Seed,
		MaxCompletionTokens: r.opts.MaxCompletionTokens, Stop: r.opts.Stop, ReasoningEffort: r.opts.ReasoningEffort,
		ExtraBody: r.opts.ExtraBody, ResponseSchema: r.opts.OutputSchema,
	}
}

// toolsDigest digests the tool manifest the model is offered.
func toolsDigest(tools []loop.Tool) (artifacts.Digest, error) {
	type entry struct {
		Spec   loop.ToolSpec `json:"spec"`
		Effect loop.Effect   `json:"effect"`
	}
	es := make([]entry, len(tools))
	for i, t := range tools {
		es[i] = entry{t.Spec(), t.Effect()}
	}
	b, err := json.Marshal(es)
	if err != nil {
		return "", err
	}
	return artifacts.DigestBytes(b), nil
}

// policyDigest covers what the operator allowed and how the prompt is
// trusted: tools, scripts, the sandbox asked for, the CFC mode and role,
// and whether drift and ineligible skills are accepted.
func policyDigest(o Options) artifacts.Digest {
	h := artifacts.NewHasher()
	h.WriteField("harness.policy/2")
	for _, t := range o.AllowTools {
		h.WriteField("tool:" + t)
	}
	for _, s := range o.AllowSkillScripts {
		h.WriteField("script:" + s)
	}
	h.WriteField("sandbox:" + o.Sandbox)
	if o.EmbeddingModel != "" {
		// It decides what find_skills shows the model.
		h.WriteField("embedding-model:" + o.EmbeddingModel)
	}
	h.WriteField(fmt.Sprint("script-memory:", o.ScriptMemoryLimit))
	if o.Profiles != "" {
		// What delegate_task can start: the profiles' skills, tools,
		// scripts and limits. Content, not name, as for the MCP file.
		h.WriteField("profiles:" + string(profilesDigest(o)))
	}
	if o.MCPConfig != "" || len(o.PassEnv)+len(o.MCPToolEffects) > 0 {
		// What servers start, with which of the operator's variables, and
		// how their tools are policed. The file's content counts, not its
		// name, as this invocation read it.
		h.WriteField("mcp-config:" + string(o.operator.recordedDigest()))
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
	for _, p := range absAll(o.ReadOnly) {
		h.WriteField("protect:" + p)
	}
	for _, p := range absAll(o.AllowProtectedWrite) {
		h.WriteField("allow-protected-write:" + p)
	}
	// Which calls wait for a person.
	for _, p := range o.ConfirmTools {
		h.WriteField("confirm-tool:" + p)
	}
	if o.WasmMemoryLimit != 0 {
		h.WriteField(fmt.Sprint("wasm-memory:", o.WasmMemoryLimit))
	}
	if forgeAllowed(o.AllowTools) {
		// Where created skills go and who must approve them.
		h.WriteField(fmt.Sprint("forge:", o.ApproveCreated, "\x00", o.ForgeRoot, "\x00", o.SkillsStore, "\x00", o.ReloadCreated))
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

// profilesDigest is the digest of the --profiles content this invocation
// read ("" when there is no file).
func profilesDigest(o Options) artifacts.Digest {
	if o.Profiles == "" {
		return ""
	}
	return artifacts.DigestBytes(o.profilesFile)
}
