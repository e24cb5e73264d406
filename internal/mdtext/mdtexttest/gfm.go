// Package mdtexttest renders Markdown as GitHub does for a job summary,
// for the tests of every writer of Markdown a CI system shows.
package mdtexttest

import (
	"bytes"
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
)

// RenderGFM is md as HTML with GitHub's extensions (tables, autolinks,
// strikethrough), raw HTML left out as GitHub leaves it out.
func RenderGFM(t testing.TB, md []byte) string {
	t.Helper()
	var out bytes.Buffer
	if err := goldmark.New(goldmark.WithExtensions(extension.GFM)).Convert(md, &out); err != nil {
		t.Fatal(err)
	}
	return out.String()
}
