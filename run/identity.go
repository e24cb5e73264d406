package run

import (
	"encoding/json"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/loop"
)

// identityVersion rises whenever the set or encoding of identity fields
// changes, so digests of different versions never compare equal by accident.
const identityVersion = 1

// Identity is a digest over everything that determines what a run does,
// with its parts kept beside it so a difference can be named. Transport
// settings (timeouts, retries, base URL credentials) are deliberately out:
// they change how a run reaches the model, not what it asks.
type Identity struct {
	Version        int                `json:"version"`
	Digest         artifacts.Digest   `json:"digest"`
	HarnessVersion string             `json:"harnessVersion"`
	Model          string             `json:"model"`
	Params         loop.Params        `json:"params"`
	PromptDigest   artifacts.Digest   `json:"promptDigest"`
	PromptRole     string             `json:"promptRole"`
	ToolsDigest    artifacts.Digest   `json:"toolsDigest"`
	PolicyDigest   artifacts.Digest   `json:"policyDigest"`
	Limits         LimitsRecord       `json:"limits"`
	RegistryDigest artifacts.Digest   `json:"registryDigest,omitempty"`
	Skills         []string           `json:"skills"`
	SkillDigests   []artifacts.Digest `json:"skillDigests"`
}

// seal computes the identity digest over every other field.
func (id *Identity) seal() error {
	id.Version = identityVersion
	id.Digest = ""
	b, err := json.Marshal(id)
	if err != nil {
		return err
	}
	id.Digest = artifacts.DigestBytes(b)
	return nil
}

// toolsDigest digests the tool manifest the model is offered.
func toolsDigest(specs []loop.ToolSpec, effects []loop.Effect) (artifacts.Digest, error) {
	type entry struct {
		Spec   loop.ToolSpec `json:"spec"`
		Effect loop.Effect   `json:"effect"`
	}
	es := make([]entry, len(specs))
	for i := range specs {
		es[i] = entry{specs[i], effects[i]}
	}
	b, err := json.Marshal(es)
	if err != nil {
		return "", err
	}
	return artifacts.DigestBytes(b), nil
}
