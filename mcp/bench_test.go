package mcp

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/harness-dev/harness/internal/testenv"
)

// BenchmarkMCPConnect is an MCP server's start to its first tool list:
// process start, initialize, tools/list (the test server, run directly;
// the sandbox's own start is BenchmarkSandboxTrivial in scripts/).
func BenchmarkMCPConnect(b *testing.B) {
	bin := testenv.BuildProgram(b, "mcp/testdata/mcpserver", "", "")
	ctx := context.Background()
	for b.Loop() {
		start, _ := hostStarter(b, bin)
		c, err := Connect(ctx, "bench", start)
		if err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}

// BenchmarkMCPCall is one tools/call round trip to a running server.
func BenchmarkMCPCall(b *testing.B) {
	bin := testenv.BuildProgram(b, "mcp/testdata/mcpserver", "", "")
	ctx := context.Background()
	start, _ := hostStarter(b, bin)
	c, err := Connect(ctx, "bench", start)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	args := json.RawMessage(`{"text":"x"}`)
	for b.Loop() {
		if _, err := c.Call(ctx, "echo", args); err != nil {
			b.Fatal(err)
		}
	}
}
