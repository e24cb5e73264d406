package run

import (
	"context"
	"maps"
	"slices"

	"github.com/harness-dev/harness/record"
)

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
