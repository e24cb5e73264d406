package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// titledLister is an MCP server over pipes that lists pages tools, one a
// page, each with a tiny name, description and schema and an annotation
// title of titleBytes.
func titledLister(pages, titleBytes int) Starter {
	return func(ctx context.Context) (*Session, error) {
		toServerR, toServerW := io.Pipe()
		fromServerR, fromServerW := io.Pipe()
		title := strings.Repeat("t", titleBytes)
		go func() {
			defer fromServerW.Close()
			sc := bufio.NewScanner(toServerR)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			n := 0
			for sc.Scan() {
				var msg struct {
					ID     json.RawMessage `json:"id"`
					Method string          `json:"method"`
					Params struct {
						ProtocolVersion string `json:"protocolVersion"`
					} `json:"params"`
				}
				if json.Unmarshal(sc.Bytes(), &msg) != nil || msg.ID == nil {
					continue
				}
				var result string
				switch msg.Method {
				case "initialize":
					result = fmt.Sprintf(`{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}`, msg.Params.ProtocolVersion)
				case "tools/list":
					n++
					next := ""
					if n < pages {
						next = fmt.Sprintf(`,"nextCursor":"c%d"`, n)
					}
					result = fmt.Sprintf(`{"tools":[{"name":"t%d","description":"d","inputSchema":{"type":"object"},"annotations":{"title":%q}}]%s}`, n, title, next)
				default:
					result = `{}`
				}
				if _, err := fmt.Fprintf(fromServerW, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", msg.ID, result); err != nil {
					return
				}
			}
		}()
		return &Session{
			Transport: &sdk.IOTransport{Reader: fromServerR, Writer: toServerW},
			Stop:      func() { toServerW.Close(); fromServerR.Close() },
		}, nil
	}
}

// The tool list's 16 MiB bound counts names, descriptions and schemas,
// but harness keeps each tool's annotations too, their title a string of
// the server's choosing: 64 tools with a title of 1 MiB each are 64 MiB
// held (1,024 of 15 MiB would be 15 GiB) and the list is accepted. The
// bound must count all that harness keeps of a tool.
func TestToolListBoundCountsAnnotationTitles(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := Connect(ctx, "titled", titledLister(64, 1<<20))
	if err == nil {
		held := 0
		for _, tool := range c.Tools() {
			if tool.Annotations != nil {
				held += len(tool.Annotations.Title)
			}
		}
		c.Close()
		t.Fatalf("a list of %d MiB of annotation titles was accepted under the %d MiB bound", held>>20, maxToolBytes>>20)
	}
}
