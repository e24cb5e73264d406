package tools

// A destructive skill's servers: held deferred, offering the tools they
// declare, until a call a person approved needs one.

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/harness-dev/harness/mcp"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/scripts"
	"github.com/harness-dev/harness/skills"
)

// RequireApproval names what a deferred server's start checks: that the
// call it starts for was approved by a person. The gate decides that
// before the call; this keeps a server of a destructive skill from
// starting for a call the gate let through for another reason.
func (h *MCPHub) RequireApproval(approved func(callID string) bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.approved = approved
}

// deferredServer is what starting a deferred server needs, and what it
// offers until then.
type deferredServer struct {
	srv      mcp.Server
	skill    *skills.Skill
	declared []mcp.Tool
	// mu makes one start at a time; failed is why the start failed (the
	// server is not tried again).
	mu     sync.Mutex
	failed error
}

// declaredTools is what a deferred server offers.
func (c *mcpConn) declaredTools() []mcp.Tool {
	if c.deferred == nil {
		return nil
	}
	return c.deferred.declared
}

// ensureStarted is the server's connection, starting a deferred server
// first. It is reached only from a call, which for a destructive skill's
// tool the gate let through after a person approved it. The server's own
// tool list must be exactly the declared one (names, descriptions,
// schemas): the person approved a call of the tool the model was shown.
func (h *MCPHub) ensureStarted(ctx context.Context, c *mcpConn, callID string) (*mcp.Conn, error) {
	d := c.deferred
	if d == nil {
		return c.conn, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	h.mu.Lock()
	conn, rec, approved := c.conn, h.rec.Servers[c.rec], h.approved
	h.mu.Unlock()
	if conn != nil {
		return conn, nil
	}
	if approved == nil || !approved(callID) {
		return nil, &scripts.Refusal{Code: "approval_missing", Msg: fmt.Sprintf("MCP server %s of skill %s starts only for a call a person approved, and call %s was not: nothing was started or called", c.key, d.skill.Name, callID)}
	}
	if d.failed != nil {
		return nil, d.failed
	}
	declared := rec.ToolsDigest
	rec.StartedAt = h.cfg.Now().UTC()
	conn, err := h.connect(ctx, c.key, d.srv, d.skill, &rec)
	if err == nil {
		listed := rec
		listed.Tools = nil
		h.describe(&listed, conn.Tools())
		if listed.ToolsDigest != declared {
			conn.Close()
			conn = nil
			err = &scripts.Refusal{Code: "mcp_tools_mismatch", Msg: fmt.Sprintf("MCP server %s of skill %s lists other tools than the skill declares (%s, declared %s): the call a person approved was of a declared tool, so nothing was called", c.key, d.skill.Name, toolNames(listed.Tools), toolNames(rec.Tools))}
		}
	}
	if err != nil {
		d.failed = err
		rec.Status, rec.Error = "failed", mcpError(err)
		h.progress("MCP server %s did not start: %s", rec.Key, rec.Error.Message)
	} else {
		rec.Status = "running"
		h.describeInfo(&rec, conn)
		h.progress("MCP server %s started for an approved call (%s %s, %d tools, %d ms)", rec.Key, rec.ServerName, rec.ServerVersion, len(rec.Tools), rec.HandshakeMs)
	}
	h.mu.Lock()
	h.rec.Servers[c.rec] = rec
	c.conn = conn
	h.write()
	h.mu.Unlock()
	h.journalServer(rec, err, false)
	return conn, err
}

func toolNames(ts []record.MCPTool) string {
	var names []string
	for _, t := range ts {
		names = append(names, t.Name)
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
