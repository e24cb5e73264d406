package runopts

import (
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/skills"
	"github.com/harness-dev/harness/yamlsafe"
)

// commandGrant is the --command-grant file as this invocation read it.
type commandGrant struct {
	digest artifacts.Digest
	// frontmatter holds the grant where a skill's manifest would be
	// (metadata.harness.permissions), so that run_command's executions
	// are granted exactly as a skill's code is.
	frontmatter map[string]any
}

// ReadCommandGrant reads and checks the --command-grant file (none:
// run_command gets the default grant, the whole workspace). It has the
// fields of a skill's metadata.harness.permissions: filesystem (read,
// write), env, exec, network.
func (o *Options) ReadCommandGrant() error {
	o.commandGrant = nil
	if o.CommandGrant == "" {
		return nil
	}
	b, err := artifacts.ReadFileAtMost(o.CommandGrant, MaxOperatorFile)
	if err != nil {
		return outcome.Usage("command_grant_invalid", "--command-grant %s: %s", o.CommandGrant, yamlsafe.Reason(err))
	}
	var perms map[string]any
	if err := yamlsafe.Unmarshal(o.CommandGrant, b, &perms, yaml.Strict()); err != nil {
		return outcome.Usage("command_grant_invalid", "--command-grant %s: %v", o.CommandGrant, err)
	}
	fm := map[string]any{"metadata": map[string]any{"harness": map[string]any{"permissions": perms}}}
	if _, err := skills.PermissionsOf(fm); err != nil {
		return outcome.Usage("command_grant_invalid", "--command-grant %s: %s (the fields are a skill manifest's: filesystem.read, filesystem.write, env, exec, network)", o.CommandGrant, strings.TrimPrefix(err.Error(), "metadata.harness.permissions: "))
	}
	o.commandGrant = &commandGrant{digest: artifacts.DigestBytes(b), frontmatter: fm}
	return nil
}

// CommandGrant is the grant run_command's executions get, as a skill's
// frontmatter would carry it (nil: the default grant).
func (o *Options) CommandGrantFrontmatter() map[string]any {
	if o.commandGrant == nil {
		return nil
	}
	return o.commandGrant.frontmatter
}

// CommandGrantDigest is the digest of the --command-grant file as read
// ("" without one).
func (o *Options) CommandGrantDigest() artifacts.Digest {
	if o.commandGrant == nil {
		return ""
	}
	return o.commandGrant.digest
}
