package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// lister is an MCP server over pipes whose answer to the nth tools/list
// (from 1) is page(n): what a skill's server (its author's code) may
// answer. Each answer is one frame of the transport.
func lister(page func(n int) string) Starter {
	return func(ctx context.Context) (*Session, error) {
		toServerR, toServerW := io.Pipe()
		fromServerR, fromServerW := io.Pipe()
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
				result := `{}`
				switch msg.Method {
				case "initialize":
					result = fmt.Sprintf(`{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}`, msg.Params.ProtocolVersion)
				case "tools/list":
					n++
					result = page(n)
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

// endlessLister answers tools/list with page after page of perPage
// tools, each with a new cursor, every page under the transport's 16 MiB
// frame bound, and counts the pages in pages.
func endlessLister(pages *atomic.Int64, perPage int) Starter {
	desc := strings.Repeat("d", 4096)
	return lister(func(int) string {
		n := pages.Add(1)
		var b strings.Builder
		b.WriteString(`{"tools":[`)
		for i := 0; i < perPage; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"name":"t%d_%d","description":%q,"inputSchema":{"type":"object"}}`, n, i, desc)
		}
		fmt.Fprintf(&b, `],"nextCursor":"c%d"}`, n)
		return b.String()
	})
}

// A server's tool list is what the model is offered, every tool of it
// with its description and schema: harness keeps it whole in memory,
// digests it, records it. A server that pages forever must be refused
// once its list passes a bound a person can be told, not held until the
// 30 s handshake timeout while the host's memory fills with tools.
func TestToolListThatPagesForeverIsRefusedByABound(t *testing.T) {
	var pages atomic.Int64
	var peak atomic.Uint64
	stop := make(chan struct{})
	go func() {
		var ms runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > peak.Load() {
				peak.Store(ms.HeapAlloc)
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	start := time.Now()
	c, err := Connect(ctx, "endless", endlessLister(&pages, 500))
	close(stop)
	took := time.Since(start)
	if c != nil {
		c.Close()
	}
	t.Logf("after %v: %d pages of 500 tools served, peak heap %d MiB, err %v", took.Round(time.Millisecond), pages.Load(), peak.Load()>>20, err)
	if err == nil {
		t.Fatal("an endless tool list was accepted")
	}
	if ctx.Err() != nil {
		t.Fatalf("Connect paged until its context ended (%d pages, %d tools, peak heap %d MiB): an endless tool list needs a bound of its own with an error that says so",
			pages.Load(), pages.Load()*500, peak.Load()>>20)
	}
}
