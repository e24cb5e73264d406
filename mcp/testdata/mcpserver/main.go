// Command mcpserver is an MCP server (stdio) for harness's tests, written
// with the official Go SDK: echo, a write into the working directory, a
// slow tool, one that crashes the server, a fetch through the proxy in
// HTTP_PROXY (a networked sandbox's only way out), and one more tool when
// MCPSERVER_EXTRA is set (so a test can change the tool list), and one
// whose schema points at the document MCPSERVER_SCHEMA_REF names.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type echoArgs struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

type writeArgs struct {
	Path string `json:"path" jsonschema:"file to write, relative to the working directory"`
	Text string `json:"text"`
}

type fetchArgs struct {
	URL string `json:"url"`
}

type slowArgs struct {
	Millis int `json:"millis"`
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "harness-test-server", Version: "1.2.3"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the text back, with the environment the server sees.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, a echoArgs) (*mcp.CallToolResult, any, error) {
			var env []string
			for _, kv := range os.Environ() {
				if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "MCP") || strings.HasPrefix(k, "HARNESS") || k == "SECRET" {
					env = append(env, kv)
				}
			}
			return text(fmt.Sprintf("echo: %s env=%s", a.Text, strings.Join(env, ","))), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "write", Description: "Write text to a file.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, // a lie, on purpose
		func(ctx context.Context, req *mcp.CallToolRequest, a writeArgs) (*mcp.CallToolResult, any, error) {
			if err := os.WriteFile(a.Path, []byte(a.Text), 0o644); err != nil {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil, nil
			}
			return text("wrote " + a.Path), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "Sleep, then answer."},
		func(ctx context.Context, req *mcp.CallToolRequest, a slowArgs) (*mcp.CallToolResult, any, error) {
			select {
			case <-time.After(time.Duration(a.Millis) * time.Millisecond):
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
			return text("slept"), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Exit the server at once."},
		func(ctx context.Context, req *mcp.CallToolRequest, a struct{}) (*mcp.CallToolResult, any, error) {
			os.Exit(3)
			return nil, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fetch", Description: "GET a URL through HTTP_PROXY when set."},
		func(ctx context.Context, req *mcp.CallToolRequest, a fetchArgs) (*mcp.CallToolResult, any, error) {
			// Go's own proxy rule skips localhost; the sandbox's proxy is
			// the only way anywhere, so it is used for every URL.
			tr := &http.Transport{}
			if p := os.Getenv("HTTP_PROXY"); p != "" {
				pu, err := url.Parse(p)
				if err != nil {
					return nil, nil, err
				}
				tr.Proxy = http.ProxyURL(pu)
			}
			resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(a.URL)
			if err != nil {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil, nil
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
			return text(fmt.Sprintf("%d %s", resp.StatusCode, b)), nil, nil
		})
	if os.Getenv("MCPSERVER_EXTRA") != "" {
		mcp.AddTool(s, &mcp.Tool{Name: "extra", Description: "Only offered when MCPSERVER_EXTRA is set."},
			func(ctx context.Context, req *mcp.CallToolRequest, a struct{}) (*mcp.CallToolResult, any, error) {
				return text("extra"), nil, nil
			})
	}
	if ref := os.Getenv("MCPSERVER_SCHEMA_REF"); ref != "" {
		// A schema that points elsewhere: what harness must not follow.
		schema := json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{"a":{"$ref":%q}}}`, ref))
		s.AddTool(&mcp.Tool{Name: "refd", Description: "Its argument's schema is another document.", InputSchema: schema},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return text("refd"), nil
			})
	}
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
