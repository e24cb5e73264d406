// Package mcp connects harness to Model Context Protocol servers: the
// mcpServers configuration shape (Claude Code's and Codex's), starting a
// server (the caller decides how: in the sandbox, or over HTTP), the
// handshake and tool list, calls with one restart after a crash. It knows
// nothing of skills or policy; tools/ decides what is offered and allowed.
package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Server is one entry of an mcpServers map.
type Server struct {
	// Command and Args start a stdio server.
	Command string   `json:"command,omitempty"`
	Args    []string `json:"args,omitempty"`
	// Env sets variables for the server. A value "${NAME}" (or "") takes
	// NAME from the operator's environment, and only when the operator
	// passes it (--pass-env NAME); any other value is used as written.
	Env map[string]string `json:"env,omitempty"`
	// Cwd is the working directory: relative to the workspace for a
	// skill's server ("" = the workspace root).
	Cwd string `json:"cwd,omitempty"`
	// Type is stdio (the default with a command) or http (streamable
	// HTTP, with URL; the default with a url).
	Type string `json:"type,omitempty"`
	URL  string `json:"url,omitempty"`
	// Headers are sent with every HTTP request; values expand "${NAME}"
	// like Env.
	Headers map[string]string `json:"headers,omitempty"`
	// Tools declare what the server will list, for a server that is not
	// started before it is needed (a destructive skill's waits for a
	// person's approval): they are offered in its place, and the server's
	// own list must be exactly them once it starts.
	Tools []DeclaredTool `json:"tools,omitempty"`
}

// DeclaredTool is one tool as a configuration declares it.
type DeclaredTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// Declared is the tool list a server's declaration amounts to, digested
// as a server's own list is (ToolOf), so that the two compare.
func (s Server) Declared() []Tool {
	var out []Tool
	for _, d := range s.Tools {
		out = append(out, ToolOf(d.Name, d.Description, d.InputSchema))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Transport kinds.
const (
	TransportStdio = "stdio"
	TransportHTTP  = "http"
)

// Transport is the server's kind after defaults.
func (s Server) Transport() string {
	if s.Type != "" {
		return s.Type
	}
	if s.URL != "" {
		return TransportHTTP
	}
	return TransportStdio
}

// serverName is compiled on first use: a bounded repetition compiles to
// one instruction per repeat, which every start would otherwise pay for.
var serverName = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,47}$`)
})

var (
	envName   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	reference = regexp.MustCompile(`^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$`)
)

// Parse reads a configuration: a JSON object with an "mcpServers" map, or
// (for a skill's metadata) the map itself. Unknown fields are errors: an
// operator reviews what a server is started with, and a misspelt key must
// not pass silently.
func Parse(b []byte, bare bool) (map[string]Server, error) {
	var servers map[string]Server
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if bare {
		if err := dec.Decode(&servers); err != nil {
			return nil, fmt.Errorf("mcp servers: %w", err)
		}
	} else {
		var doc struct {
			Servers map[string]Server `json:"mcpServers"`
		}
		if err := dec.Decode(&doc); err != nil {
			return nil, fmt.Errorf("mcp config: %w (want {\"mcpServers\": {\"name\": {\"command\": ..., \"args\": [...]}}})", err)
		}
		if doc.Servers == nil {
			return nil, fmt.Errorf("mcp config: no \"mcpServers\" object")
		}
		servers = doc.Servers
	}
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		if err := check(name, servers[name]); err != nil {
			return nil, err
		}
	}
	return servers, nil
}

func check(name string, s Server) error {
	if !serverName().MatchString(name) || strings.Contains(name, "__") {
		return fmt.Errorf("mcp server %q: a name is letters, digits, '-' and '_' (no \"__\"), at most 48", name)
	}
	switch s.Transport() {
	case TransportStdio:
		if s.Command == "" || s.URL != "" || len(s.Headers) > 0 {
			return fmt.Errorf("mcp server %q: a stdio server has a command and no url or headers", name)
		}
	case TransportHTTP, "streamable-http", "streamableHttp":
		if s.URL == "" || s.Command != "" || len(s.Args) > 0 || s.Cwd != "" {
			return fmt.Errorf("mcp server %q: an http server has a url and no command, args or cwd", name)
		}
		if !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://") {
			return fmt.Errorf("mcp server %q: url %q is not http(s)", name, s.URL)
		}
	default:
		return fmt.Errorf("mcp server %q: type %q is not stdio or http", name, s.Type)
	}
	seen := map[string]bool{}
	for _, t := range s.Tools {
		var schema map[string]any
		if t.Name == "" || seen[t.Name] {
			return fmt.Errorf("mcp server %q: each declared tool has a name of its own", name)
		}
		if json.Unmarshal(t.InputSchema, &schema) != nil {
			return fmt.Errorf("mcp server %q: tool %s: inputSchema is a JSON object", name, t.Name)
		}
		seen[t.Name] = true
	}
	for k, v := range s.Env {
		if !envName.MatchString(k) {
			return fmt.Errorf("mcp server %q: env %q is not a variable name", name, k)
		}
		if strings.Contains(v, "${") && !reference.MatchString(v) {
			return fmt.Errorf("mcp server %q: env %s: a reference is the whole value, \"${NAME}\"", name, k)
		}
	}
	return nil
}

// IsEnvName reports whether s is an environment variable name.
func IsEnvName(s string) bool { return envName.MatchString(s) }

// Passed reports which names s takes from the operator's environment.
func (s Server) Passed() []string {
	var names []string
	for k, v := range s.Env {
		if n := refName(k, v); n != "" {
			names = append(names, n)
		}
	}
	for _, v := range s.Headers {
		if m := reference.FindStringSubmatch(strings.TrimPrefix(v, "Bearer ")); m != nil {
			names = append(names, m[1])
		}
	}
	sort.Strings(names)
	return slices.Compact(names)
}

func refName(k, v string) string {
	if v == "" {
		return k
	}
	if m := reference.FindStringSubmatch(v); m != nil {
		return m[1]
	}
	return ""
}

// Environ is the server's complete environment: base, the literal values,
// and the referenced names found in lookup (the operator's environment,
// already narrowed to what may pass). missing lists references lookup did
// not have.
func (s Server) Environ(base []string, lookup func(string) (string, bool)) (env []string, missing []string) {
	env = slices.Clone(base)
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		v := s.Env[k]
		if n := refName(k, v); n != "" {
			val, ok := lookup(n)
			if !ok {
				missing = append(missing, n)
				continue
			}
			v = val
		}
		env = append(env, k+"="+v)
	}
	return env, missing
}

// HeaderValues expands the headers' references through lookup.
func (s Server) HeaderValues(lookup func(string) (string, bool)) (map[string]string, []string) {
	out := map[string]string{}
	var missing []string
	for k, v := range s.Headers {
		prefix := ""
		if strings.HasPrefix(v, "Bearer ") {
			prefix, v = "Bearer ", strings.TrimPrefix(v, "Bearer ")
		}
		if m := reference.FindStringSubmatch(v); m != nil {
			val, ok := lookup(m[1])
			if !ok {
				missing = append(missing, m[1])
				continue
			}
			v = val
		}
		out[k] = prefix + v
	}
	return out, missing
}
