package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/mcp"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
)

// MCPTool is one server tool as the model sees it, <key>__<tool>.
type MCPTool struct {
	hub    *MCPHub
	c      *mcpConn
	tool   record.MCPTool
	schema json.RawMessage
}

// MCPServer names the key of the tool's server: run leaves these tools
// out of the sealed tool manifest (their drift is checked by digest).
func (t *MCPTool) MCPServer() string { return t.c.key }

func (t *MCPTool) Effect() loop.Effect { return loop.Effect(t.tool.Effect) }

func (t *MCPTool) Spec() loop.ToolSpec {
	desc := t.tool.Description
	if len(desc) > 1024 {
		desc = desc[:1024]
	}
	return loop.ToolSpec{
		Name:        t.tool.Exposed,
		Description: fmt.Sprintf("[MCP server %s] %s", t.c.key, desc),
		Parameters:  t.schema,
	}
}

func (t *MCPTool) Call(ctx context.Context, call loop.ToolCall, raw json.RawMessage) (res loop.ToolResult, err error) {
	rec := record.MCPCall{Type: record.TypeMCPCall, OutputID: call.ID, RunID: t.hub.cfg.RunID, Key: t.c.key, Server: t.c.name, Tool: t.tool.Name,
		ArgsDigest: artifacts.DigestBytes(raw), CalledAt: t.hub.cfg.Now().UTC()}
	if t.c.skill != "" {
		// A skill's server that can write may make a .git while it
		// answers, or from a thread of its own since its last call:
		// whatever the call's result, the sweep after a script's call
		// runs after it too.
		defer func() {
			if err != nil {
				return
			}
			code, msg, left := t.hub.sweep("MCP server " + t.c.key + " (or another skill's server)")
			if code == "" {
				return
			}
			rec.Status, rec.Error = "error", &outcome.Record{Code: code, Message: msg}
			res = loop.ErrorResult(code, msg, rec)
			if len(left) > 0 {
				err = notUndone(t.tool.Exposed, left)
			}
		}()
	}
	conn, err := t.hub.ensureStarted(ctx, t.c, call.ID)
	if err != nil {
		rec.Status, rec.Error = "error", mcpError(err)
		return loop.ErrorResult(rec.Error.Code, rec.Error.Message, rec), nil
	}
	before := conn.Restarts()
	t0 := time.Now()
	callCtx := ctx
	if t.c.timeout > 0 {
		var cancel context.CancelFunc
		callCtx, cancel = context.WithTimeout(ctx, t.c.timeout)
		defer cancel()
	}
	cres, err := conn.Call(callCtx, t.tool.Name, raw)
	rec.DurationMs = time.Since(t0).Milliseconds()
	rec.Restarted = conn.Restarts() > before
	if rec.Restarted {
		t.hub.noteRestart(t.c)
	}
	if err != nil {
		if ctx.Err() != nil {
			rec.Status, rec.Error = "error", &outcome.Record{Code: "interrupted", Message: "the run was interrupted during the call"}
			return loop.ErrorResult("interrupted", rec.Error.Message, rec), nil
		}
		if callCtx.Err() != nil {
			msg := fmt.Sprintf("the call took longer than %s", t.c.timeoutSource)
			rec.Status, rec.Error = "timeout", &outcome.Record{Code: "mcp_call_timeout", Message: msg}
			return loop.ErrorResult("mcp_call_timeout", msg, rec), nil
		}
		code := "mcp_call_failed"
		if errors.Is(err, mcp.ErrCrashed) {
			code = "mcp_server_crashed"
			t.hub.noteCrash(t.c)
		}
		rec.Status, rec.Error = "error", &outcome.Record{Code: code, Message: err.Error()}
		return loop.ErrorResult(code, err.Error(), rec), nil
	}
	rec.Status, rec.Result = "ok", cres.Text
	if cres.IsError {
		rec.Status = "tool_error"
	}
	out := map[string]any{"server": t.c.key, "tool": t.tool.Name, "isError": cres.IsError, "text": cres.Text}
	if len(cres.Structured) > 0 {
		out["structuredContent"] = cres.Structured
	}
	if len(cres.Other) > 0 {
		out["omittedContent"] = cres.Other
	}
	b, _ := json.Marshal(out)
	status := loop.StatusOK
	if cres.IsError {
		status = loop.StatusError
	}
	return loop.ToolResult{Content: string(b), Status: status, Record: rec}, nil
}

// describeInfo fills what the handshake said.
func (h *MCPHub) describeInfo(rec *record.MCPServer, conn *mcp.Conn) {
	info := conn.Info()
	rec.ServerName, rec.ServerVersion, rec.ProtocolVersion = info.Name, info.Version, info.ProtocolVersion
}

// describe fills what the tool list said (the server's, or a deferred
// server's declaration), and what the operator allowed of it.
func (h *MCPHub) describe(rec *record.MCPServer, tools []mcp.Tool) {
	hs := artifacts.NewHasher()
	for _, t := range tools {
		exposed := rec.Key + MCPSeparator + t.Name
		effect, source := loop.EffectSideEffect, "default"
		if e, ok := h.cfg.Effects[exposed]; ok {
			effect, source = e, "operator"
		}
		var ann json.RawMessage
		if t.Annotations != nil {
			ann, _ = json.Marshal(t.Annotations)
		}
		rec.Tools = append(rec.Tools, record.MCPTool{Name: t.Name, Exposed: exposed, Description: t.Description,
			SchemaDigest: t.SchemaDigest, Digest: t.Digest, Annotations: ann, Effect: string(effect), EffectSource: source,
			Offered: MCPAllowed(h.cfg.Allowed, exposed) && validToolName(exposed)})
		hs.WriteField(t.Name)
		hs.WriteField(string(t.Digest))
	}
	rec.ToolsDigest = hs.Digest()
}

// validToolName is what an OpenAI-compatible API accepts as a function
// name; a server's tool with another name is listed but never offered.
func validToolName(n string) bool {
	if n == "" || len(n) > 64 {
		return false
	}
	for _, r := range n {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}
