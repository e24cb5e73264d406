package tools

// What the operator's MCP flags and a skill's MCP declaration say, checked
// before any server starts: the keys --allow-tool and --confirm-tool may
// name, a skill's servers as it declares them, and --mcp-tool-effect.

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/mcp"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/skills"
)

// CheckMCPAllowed refuses an --allow-tool KEY__TOOL (or KEY__*) whose KEY
// is no server the operator configured and no skill that declares servers
// (mcp.json or metadata.harness.mcp): allowing a server that does not
// exist is a typo that would otherwise go unnoticed until the model missed
// the tools.
//
// A skill with one server is its KEY; a skill with several offers each as
// <skill>-<server>, read through stager (nil: the skill's name only).
func CheckMCPAllowed(allowed []string, op *OperatorServers, reg *skills.Registry, stager *Stager) error {
	return checkMCPKeys("--allow-tool", allowed, op, reg, stager)
}

// CheckMCPConfirmed refuses a --confirm-tool KEY__TOOL whose KEY (when it
// is no glob) is no server and no skill with servers: a misspelt KEY
// would make nothing wait for a person. TOOL is not checked: a server's
// tools are known only once it lists them.
func CheckMCPConfirmed(confirm []string, op *OperatorServers, reg *skills.Registry, stager *Stager) error {
	var literal []string
	for _, p := range confirm {
		key, _, ok := strings.Cut(p, MCPSeparator)
		if ok && !strings.ContainsAny(key, "*?[\\") {
			literal = append(literal, p)
		}
	}
	return checkMCPKeys("--confirm-tool", literal, op, reg, stager)
}

func checkMCPKeys(flag string, patterns []string, op *OperatorServers, reg *skills.Registry, stager *Stager) error {
	known := map[string]bool{}
	if op != nil {
		for k := range op.Servers {
			known[k] = true
		}
	}
	if reg != nil {
		for i := range reg.Skills {
			s := &reg.Skills[i]
			_, hasFile := s.Resource(MCPConfigFile)
			if !hasFile && !declaresMCP(s) {
				continue
			}
			if stager == nil || !namedBy(patterns, s.Name) {
				known[s.Name] = true
				continue
			}
			// The keys are those the hub gives the skill's servers: a
			// name a typo or a skill alone would leave matching nothing.
			// A file that cannot be read leaves the skill's name, and
			// the server's start says what is wrong with it.
			servers, _, _, err := SkillServers(s, func(rel string) ([]byte, error) { return readStaged(stager, s, rel) })
			if err != nil || len(servers) <= 1 {
				known[s.Name] = true
				continue
			}
			for n := range servers {
				known[s.Name+"-"+n] = true
			}
		}
	}
	for _, t := range patterns {
		key, _, ok := strings.Cut(t, MCPSeparator)
		if !ok || known[key] {
			continue
		}
		names := slices.Sorted(maps.Keys(known))
		have := "none: give --mcp-config FILE, or a skill with an mcp.json"
		if len(names) > 0 {
			have = strings.Join(names, ", ")
		}
		near := ""
		if n := outcome.Nearest(key, names); n != "" {
			near = " (did you mean " + n + "?)"
		}
		return outcome.Usage("mcp_server_unknown", "%s %s: no MCP server or skill with servers is named %s%s (servers and skills with servers: %s)", flag, t, key, near, have)
	}
	return nil
}

// namedBy says whether a pattern's key is the skill's name or starts with
// it and a hyphen, so a skill's servers are read only when asked about.
func namedBy(patterns []string, skill string) bool {
	for _, t := range patterns {
		key, _, _ := strings.Cut(t, MCPSeparator)
		if key == skill || strings.HasPrefix(key, skill+"-") {
			return true
		}
	}
	return false
}

func declaresMCP(s *skills.Skill) bool {
	meta, _ := s.Frontmatter["metadata"].(map[string]any)
	h, _ := meta["harness"].(map[string]any)
	_, ok := h["mcp"]
	return ok
}

// SkillServers reads a skill's MCP servers: metadata.harness.mcp from the
// snapshot's frontmatter, and mcp.json from the skill's verified files.
// The two may not name the same server.
func SkillServers(s *skills.Skill, read func(rel string) ([]byte, error)) (map[string]mcp.Server, string, artifacts.Digest, error) {
	out := map[string]mcp.Server{}
	var file string
	var digest artifacts.Digest
	if meta, ok := s.Frontmatter["metadata"].(map[string]any); ok {
		if h, ok := meta["harness"].(map[string]any); ok {
			if raw, ok := h["mcp"]; ok {
				b, err := json.Marshal(raw)
				if err != nil {
					return nil, "", "", err
				}
				m, err := mcp.Parse(b, true)
				if err != nil {
					return nil, "", "", fmt.Errorf("SKILL.md metadata.harness.mcp: %w", err)
				}
				out, file, digest = m, "SKILL.md", s.Digest
			}
		}
	}
	if res, ok := s.Resource(MCPConfigFile); ok {
		b, err := read(res.Path)
		if err != nil {
			return nil, "", "", err
		}
		m, err := mcp.Parse(b, false)
		if err != nil {
			return nil, "", "", fmt.Errorf("%s: %w", MCPConfigFile, err)
		}
		for k, v := range m {
			if _, dup := out[k]; dup {
				return nil, "", "", fmt.Errorf("server %q is in both SKILL.md metadata.harness.mcp and %s", k, MCPConfigFile)
			}
			out[k] = v
		}
		file, digest = MCPConfigFile, res.Digest
	}
	return out, file, digest, nil
}

// MCPAllowed reports whether --allow-tool entries allow the exposed name:
// exactly, or by key__*.
func MCPAllowed(allowed []string, exposed string) bool {
	key, _, _ := strings.Cut(exposed, MCPSeparator)
	return slices.Contains(allowed, exposed) || slices.Contains(allowed, key+MCPSeparator+"*")
}

// ParseToolEffects reads --mcp-tool-effect key__tool=read|write|side-effect.
func ParseToolEffects(entries []string) (map[string]loop.Effect, error) {
	out := map[string]loop.Effect{}
	for _, e := range entries {
		name, eff, ok := strings.Cut(e, "=")
		if !ok || !strings.Contains(name, MCPSeparator) {
			return nil, outcome.Usage("mcp_effect_invalid", "--mcp-tool-effect %q: give KEY__TOOL=read, write or side-effect", e)
		}
		switch loop.Effect(eff) {
		case loop.EffectRead, loop.EffectWrite, loop.EffectSideEffect:
			out[name] = loop.Effect(eff)
		default:
			return nil, outcome.Usage("mcp_effect_invalid", "--mcp-tool-effect %q: the effect is read, write or side-effect", e)
		}
	}
	return out, nil
}
