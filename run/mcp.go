package run

import (
	"context"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/mcp"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/tools"
)

// readMCPConfig reads and checks the operator's MCP server file.
func readMCPConfig(file string) (*tools.OperatorServers, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, outcome.Usage("mcp_config_unreadable", "--mcp-config %s: %v", file, err)
	}
	servers, err := mcp.Parse(b, false)
	if err != nil {
		return nil, outcome.Usage("mcp_config_invalid", "--mcp-config %s: %v", file, err)
	}
	return &tools.OperatorServers{File: file, Digest: artifacts.DigestBytes(b), Servers: servers}, nil
}

// mcpConfigDigest is the digest of the file's content now ("" when none,
// "unreadable" when it cannot be read: a resume then sees drift).
func mcpConfigDigest(file string) artifacts.Digest {
	if file == "" {
		return ""
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "unreadable"
	}
	return artifacts.DigestBytes(b)
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
	if r.resumed == nil || len(r.resumed.mcpServers) == 0 {
		return nil
	}
	now := map[string]record.MCPServer{}
	if r.mcp != nil {
		for _, s := range r.mcp.Start(ctx) {
			now[s.Key] = s
		}
	}
	var items []record.DriftItem
	for _, key := range slices.Sorted(maps.Keys(r.resumed.mcpServers)) {
		was := r.resumed.mcpServers[key]
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
