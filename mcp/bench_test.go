package mcp

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/testenv"
	"github.com/harness-dev/harness/scripts"
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

// BenchmarkMCPConnectSandboxed is BenchmarkMCPConnect with the server in
// the bwrap sandbox, as a skill's server runs: the sandbox's start and
// the handshake together.
func BenchmarkMCPConnectSandboxed(b *testing.B) {
	if _, err := scripts.Probe(context.Background(), scripts.BackendBwrap, ""); err != nil {
		b.Skipf("bwrap unavailable: %v", err)
	}
	bin := testenv.BuildProgram(b, "mcp/testdata/mcpserver", "", "")
	ctx := context.Background()
	spec := scripts.Spec{Argv: []string{filepath.Base(bin)}, Env: []string{"PATH=/usr/bin:/bin"}, Path: filepath.Dir(bin), Cwd: "/tmp"}
	start := func(ctx context.Context) (*Session, error) {
		p, err := scripts.Start(ctx, scripts.BackendBwrap, spec)
		if err != nil {
			return nil, err
		}
		return &Session{Transport: &sdk.IOTransport{Reader: p.Stdout, Writer: p.Stdin}, Stop: p.Stop, Exited: func() bool { return false }, Describe: func() string { return "" }}, nil
	}
	for b.Loop() {
		c, err := Connect(ctx, "bench", start)
		if err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}
