package run

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/mcp"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/tools"
)

// operatorConfig is the operator's --mcp-config as this invocation read
// it, once. The identity, run.json, the policy snapshot, resume's drift
// check and the servers started all take it from here: reading the file
// again for each let an edit during the run start servers that no record
// described.
type operatorConfig struct {
	// digest is of the bytes read, "unreadable" when there were none:
	// drift for a resume that starts no server from the file (one that
	// would is refused with err).
	digest  artifacts.Digest
	servers *tools.OperatorServers // nil when err is set
	err     error                  // why the file cannot be used: a usage error
}

// loadOperatorConfig reads and checks the operator's MCP server file; nil
// when there is none.
func loadOperatorConfig(file string) *operatorConfig {
	if file == "" {
		return nil
	}
	b, err := artifacts.ReadFileAtMost(file, maxOperatorFile)
	if err != nil {
		return &operatorConfig{digest: "unreadable", err: outcome.Usage("mcp_config_unreadable", "--mcp-config %s: %v", file, err)}
	}
	c := &operatorConfig{digest: artifacts.DigestBytes(b)}
	servers, err := mcp.Parse(b, false)
	if err != nil {
		c.err = outcome.Usage("mcp_config_invalid", "--mcp-config %s: %v", file, err)
		return c
	}
	c.servers = &tools.OperatorServers{File: file, Digest: c.digest, Servers: servers}
	return c
}

// recordedDigest is what the records say of the file: "" when there is
// none.
func (c *operatorConfig) recordedDigest() artifacts.Digest {
	if c == nil {
		return ""
	}
	return c.digest
}

// mcpWanted reports whether any MCP server could be started: only a server
// one of whose tools the operator allowed is ever started.
func mcpWanted(o Options) bool {
	return slices.ContainsFunc(o.AllowTools, func(t string) bool { return strings.Contains(t, tools.MCPSeparator) })
}

// mcpDrift starts, on resume, the servers the stopped run had started and
// compares their tool lists with the journal's record: a server that now
// offers different tools, or cannot start, is drift.
func (r *runner) mcpDrift(ctx context.Context) []record.DriftItem {
	if r.resumed == nil || len(r.resumed.MCPServers) == 0 {
		return nil
	}
	now := map[string]record.MCPServer{}
	if r.mcp != nil {
		for _, s := range r.mcp.Start(ctx) {
			now[s.Key] = s
		}
	}
	var items []record.DriftItem
	for _, key := range slices.Sorted(maps.Keys(r.resumed.MCPServers)) {
		was := r.resumed.MCPServers[key]
		cur, ok := now[key]
		switch {
		case !ok:
			items = append(items, record.DriftItem{Field: "mcp:" + key, Recorded: string(was.ToolsDigest), Current: "not started"})
		case cur.Status == "failed":
			items = append(items, record.DriftItem{Field: "mcp:" + key, Recorded: string(was.ToolsDigest), Current: "failed: " + cur.Error.Message})
		case cur.ToolsDigest != was.ToolsDigest:
			items = append(items, record.DriftItem{Field: "mcp:" + key, Recorded: string(was.ToolsDigest), Current: string(cur.ToolsDigest)})
		}
	}
	return items
}
