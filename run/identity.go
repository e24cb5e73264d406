package run

import (
	"encoding/json"

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
		WireAPI:        r.opts.Wire(),
		Params:         r.opts.Params(),
		PromptDigest:   artifacts.DigestString(r.opts.Prompt),
		PromptRole:     r.opts.PromptRole,
		ToolsDigest:    td,
		PolicyDigest:   r.opts.PolicyDigest(r.lin.profiles),
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
