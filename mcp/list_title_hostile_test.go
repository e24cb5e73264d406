package mcp

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// titledLister lists pages tools, one a page, each with a tiny name,
// description and schema and an annotation title of titleBytes.
func titledLister(pages, titleBytes int) Starter {
	title := strings.Repeat("t", titleBytes)
	return lister(func(n int) string {
		next := ""
		if n < pages {
			next = fmt.Sprintf(`,"nextCursor":"c%d"`, n)
		}
		return fmt.Sprintf(`{"tools":[{"name":"t%d","description":"d","inputSchema":{"type":"object"},"annotations":{"title":%q}}]%s}`, n, title, next)
	})
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
