package runopts

import (
	"slices"
	"strings"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/mcp"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/tools"
)

// MaxOperatorFile bounds the configuration files an operator names
// (--mcp-config, --profiles), which are read whole.
const MaxOperatorFile = 1 << 20

// MCPFile is the operator's --mcp-config as this invocation read it, once.
// The identity, run.json, the policy snapshot, resume's drift check and
// the servers started all take it from here: reading the file again for
// each let an edit during the run start servers that no record described.
type MCPFile struct {
	// digest is of the bytes read, "unreadable" when there were none:
	// drift for a resume that starts no server from the file (one that
	// would is refused with err).
	digest  artifacts.Digest
	servers *tools.OperatorServers // nil when err is set
	err     error                  // why the file cannot be used: a usage error
}

// ReadMCPFile reads and checks the --mcp-config file (none: nothing to
// read). Its error is the file's when it cannot be used; a resume that
// starts no server from it ignores that and sees the change as drift.
func (o *Options) ReadMCPFile() error {
	o.mcpFile = nil
	if o.MCPConfig == "" {
		return nil
	}
	b, err := artifacts.ReadFileAtMost(o.MCPConfig, MaxOperatorFile)
	if err != nil {
		o.mcpFile = &MCPFile{digest: "unreadable", err: outcome.Usage("mcp_config_unreadable", "--mcp-config %s: %v", o.MCPConfig, err)}
		return o.mcpFile.err
	}
	o.mcpFile = &MCPFile{digest: artifacts.DigestBytes(b)}
	servers, err := mcp.Parse(b, false)
	if err != nil {
		o.mcpFile.err = outcome.Usage("mcp_config_invalid", "--mcp-config %s: %v", o.MCPConfig, err)
		return o.mcpFile.err
	}
	o.mcpFile.servers = &tools.OperatorServers{File: o.MCPConfig, Digest: o.mcpFile.digest, Servers: servers}
	return nil
}

// MCPServers are the servers of the --mcp-config file as read (nil
// without one), or why the file cannot be used.
func (o *Options) MCPServers() (*tools.OperatorServers, error) {
	if o.mcpFile == nil {
		return nil, nil
	}
	return o.mcpFile.servers, o.mcpFile.err
}

// MCPFileDigest is what the records say of the --mcp-config file: ""
// when there is none.
func (o *Options) MCPFileDigest() artifacts.Digest {
	if o.mcpFile == nil {
		return ""
	}
	return o.mcpFile.digest
}

// MCPWanted reports whether any MCP server could be started: only a
// server one of whose tools the operator allowed is ever started.
func (o *Options) MCPWanted() bool {
	return slices.ContainsFunc(o.AllowTools, func(t string) bool { return strings.Contains(t, tools.MCPSeparator) })
}
