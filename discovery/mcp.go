package discovery

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/harness-dev/harness/internal/shellquote"
)

// DefaultMCPRegistry is the Model Context Protocol's public registry.
const DefaultMCPRegistry = "https://registry.modelcontextprotocol.io"

// MCPServer is a server an MCP registry lists, with how to run it.
type MCPServer struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Version     string   `json:"version,omitempty"`
	Install     []string `json:"install"`
}

// registryServer reads both shapes the registry has served: a server
// object, or one wrapped as {"server": {...}, "_meta": {...}}, with
// packages named by registryType/identifier or registry_type/name.
type registryServer struct {
	Server      *registryServer `json:"server"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Version     string          `json:"version"`
	Packages    []struct {
		RegistryType  string `json:"registryType"`
		RegistryType0 string `json:"registry_type"`
		RegistryName0 string `json:"registry_name"`
		Identifier    string `json:"identifier"`
		Name          string `json:"name"`
		Version       string `json:"version"`
	} `json:"packages"`
	Remotes []struct {
		Type          string `json:"type"`
		TransportType string `json:"transport_type"`
		URL           string `json:"url"`
	} `json:"remotes"`
}

// SearchMCP asks registry's /v0/servers?search= for servers matching
// query, with a timeout; the answer is read as data only.
func SearchMCP(ctx context.Context, client *http.Client, registry, query string, limit int) ([]MCPServer, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	u := strings.TrimSuffix(registry, "/") + "/v0/servers?" + url.Values{"search": {query}, "limit": {fmt.Sprint(limit)}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := withoutRedirects(client).Do(req)
	if err != nil {
		return nil, fmt.Errorf("MCP registry %s cannot be reached: %v", registry, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("MCP registry %s answered HTTP %d%s", registry, resp.StatusCode, redirectAdvice(resp, "the registry"))
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxIndexBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxIndexBytes {
		return nil, fmt.Errorf("MCP registry %s sent more than %d bytes", registry, MaxIndexBytes)
	}
	var list struct {
		Servers []registryServer `json:"servers"`
	}
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, fmt.Errorf("MCP registry %s: not a server list: %v", registry, err)
	}
	var out []MCPServer
	for _, s := range list.Servers {
		if s.Server != nil {
			s = *s.Server
		}
		if s.Name == "" {
			continue
		}
		m := MCPServer{Name: s.Name, Description: s.Description, Version: s.Version, Install: []string{}}
		for _, p := range s.Packages {
			kind := firstOf(p.RegistryType, p.RegistryType0, p.RegistryName0)
			id := firstOf(p.Identifier, p.Name)
			if hint := installHint(kind, id, p.Version); hint != "" {
				m.Install = append(m.Install, hint)
			}
		}
		for _, r := range s.Remotes {
			m.Install = append(m.Install, fmt.Sprintf("remote %s: %s", firstOf(r.Type, r.TransportType), r.URL))
		}
		out = append(out, m)
		if len(out) == limit {
			break
		}
	}
	return out, nil
}

// installHint is how a package runs as an MCP server, as the command of a
// --mcp-config entry.
func installHint(kind, id, version string) string {
	// A registry's words name a package: not an option of the command
	// (npx runs --call=..., uvx --from=... fetches elsewhere, docker
	// --privileged), and not a command of the registry's choosing.
	if !packageWord(id) || (version != "" && !packageWord(version)) {
		return ""
	}
	at := ""
	if version != "" {
		at = "@" + version
	}
	var words []string
	switch kind {
	case "npm":
		words = []string{"npx", "-y", id + at}
	case "pypi":
		if version != "" {
			words = []string{"uvx", id + "==" + version}
		} else {
			words = []string{"uvx", id}
		}
	case "oci", "docker":
		if version != "" && !strings.Contains(id, ":") {
			id += ":" + version
		}
		words = []string{"docker", "run", "-i", "--rm", id}
	case "nuget":
		words = []string{"dnx", id + at}
	default:
		return ""
	}
	// The registry's words: each stays one word of one command.
	line, ok := shellquote.Line(words...)
	if !ok {
		return ""
	}
	return line
}

// packageWord says whether w can be a package's name, image or version
// as registries write them: letters, digits and @ / . _ : ~ + -, not
// starting with "-".
func packageWord(w string) bool {
	if w == "" || w[0] == '-' {
		return false
	}
	for _, r := range w {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@/._:~+-", r)) {
			return false
		}
	}
	return true
}

func firstOf(xs ...string) string {
	for _, x := range xs {
		if x != "" {
			return x
		}
	}
	return ""
}
