package record

import (
	"encoding/json"
	"time"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/outcome"
)

// MCPServers is mcp-servers.json: every MCP server the run started (or
// failed to start), rewritten on each change.
type MCPServers struct {
	artifacts.Envelope
	Servers []MCPServer `json:"servers"`
}

// MCPServer is one server: where it came from, how it was started, what
// the handshake said and the tools it listed.
type MCPServer struct {
	// Key prefixes its tools' names (<key>__<tool>): the skill's name, or
	// the operator's server name.
	Key string `json:"key"`
	// Name is the server's entry in its mcpServers map.
	Name string `json:"name"`
	// Origin is "skill" (mcp.json or metadata.harness.mcp of Skill) or
	// "operator" (--mcp-config).
	Origin      string           `json:"origin"`
	Skill       string           `json:"skill,omitempty"`
	SkillDigest artifacts.Digest `json:"skillDigest,omitempty"`
	// ConfigFile is where the entry was read (a skill-relative path, or
	// the operator's file) and ConfigDigest its digest.
	ConfigFile   string           `json:"configFile"`
	ConfigDigest artifacts.Digest `json:"configDigest"`
	Transport    string           `json:"transport"`
	// Command is the server's command as configured; Argv as executed on
	// the host, sandbox wrapper included.
	Command []string `json:"command,omitempty"`
	Argv    []string `json:"argv,omitempty"`
	URL     string   `json:"url,omitempty"`
	Cwd     string   `json:"cwd,omitempty"`
	// EnvNames are the variables the server was given (values are never
	// recorded); PassedEnv those taken from the operator's environment.
	EnvNames  []string `json:"envNames"`
	PassedEnv []string `json:"passedEnv"`
	// WithheldEnv are references the server asked for that did not pass:
	// not declared by the skill, not passed by the operator, or unset.
	WithheldEnv []string `json:"withheldEnv"`
	// Sandbox is the backend it ran in ("none" for an operator's server,
	// which runs as the operator's own program).
	Sandbox string `json:"sandbox"`
	RunAs   string `json:"runAs,omitempty"`
	// Network is set when its skill declared hosts and the operator
	// allowed some: it then reaches those through harness's proxy
	// (absent: no network at all).
	Network *NetworkGrant `json:"network,omitempty"`
	// ResolvedArgs are arguments that named a file of the skill, and the
	// path the server got for each ("server.py → /skills/x/server.py").
	ResolvedArgs []string `json:"resolvedArgs,omitempty"`
	// Grant is what a skill's server was given and what enforced it.
	Grant *Grant `json:"grant,omitempty"`

	StartedAt   time.Time `json:"startedAt"`
	HandshakeMs int64     `json:"handshakeMs"`
	// ServerName, ServerVersion and ProtocolVersion are the handshake's.
	ServerName      string    `json:"serverName,omitempty"`
	ServerVersion   string    `json:"serverVersion,omitempty"`
	ProtocolVersion string    `json:"protocolVersion,omitempty"`
	Tools           []MCPTool `json:"tools"`
	// ToolsDigest is over the tools' digests in name order: what a resume
	// compares.
	ToolsDigest artifacts.Digest `json:"toolsDigest,omitempty"`
	// Status is running, stopped, failed (never started), crashed, or
	// deferred (a destructive skill's server, offered with the tools the
	// skill declared and started only for a call a person approved).
	Status   string          `json:"status"`
	Restarts int             `json:"restarts"`
	Error    *outcome.Record `json:"error,omitempty"`
}

// MCPTool is one listed tool and what the run made of it.
type MCPTool struct {
	Name string `json:"name"`
	// Exposed is the name the model sees, <key>__<name>.
	Exposed      string           `json:"exposed"`
	Description  string           `json:"description,omitempty"`
	SchemaDigest artifacts.Digest `json:"schemaDigest"`
	Digest       artifacts.Digest `json:"digest"`
	// Annotations are the server's hints, recorded as context only.
	Annotations json.RawMessage `json:"annotations,omitempty"`
	// Effect is the CFC effect: side-effect unless the operator said
	// otherwise (--mcp-tool-effect); EffectSource says which.
	Effect       string `json:"effect"`
	EffectSource string `json:"effectSource"`
	// Offered is whether the operator allowed it (--allow-tool).
	Offered bool `json:"offered"`
}

// MCPServerEvent is the journal's record of a server start: the tool
// digests a resume compares.
type MCPServerEvent struct {
	Key         string           `json:"key"`
	Name        string           `json:"name"`
	Origin      string           `json:"origin"`
	ServerName  string           `json:"serverName,omitempty"`
	Version     string           `json:"serverVersion,omitempty"`
	Tools       []MCPToolDigest  `json:"tools"`
	ToolsDigest artifacts.Digest `json:"toolsDigest"`
	Error       *outcome.Record  `json:"error,omitempty"`
	// Deferred marks a server that was not started: a destructive
	// skill's, which starts at the first call a person approved. Its
	// tools are the ones the skill declared.
	Deferred bool `json:"deferred,omitempty"`
}

// MCPToolDigest names one tool and its digest.
type MCPToolDigest struct {
	Name   string           `json:"name"`
	Digest artifacts.Digest `json:"digest"`
}

// MCPCall is the record of one MCP tool call (tool-outputs/).
type MCPCall struct {
	Type       string           `json:"type"`
	OutputID   string           `json:"outputId"`
	RunID      string           `json:"runId"`
	Key        string           `json:"key"`
	Server     string           `json:"server"`
	Tool       string           `json:"tool"`
	ArgsDigest artifacts.Digest `json:"argumentsDigest"`
	CalledAt   time.Time        `json:"calledAt"`
	DurationMs int64            `json:"durationMs"`
	// Status is ok, tool_error (the server said isError), or error.
	Status string          `json:"status"`
	Result string          `json:"result,omitempty"`
	Error  *outcome.Record `json:"error,omitempty"`
	// Restarted is set when the server died during this call and was
	// started again.
	Restarted bool `json:"restarted,omitempty"`
}

// NetworkAttempt is one line of network-log.jsonl: a connection a
// sandboxed script or skill server asked harness's egress proxy for.
type NetworkAttempt struct {
	artifacts.Envelope
	Time  time.Time `json:"time"`
	Skill string    `json:"skill"`
	// Source is what ran: script:<path> or mcp:<server key>.
	Source string `json:"source"`
	Method string `json:"method"`
	Host   string `json:"host"`
	Port   int    `json:"port"`
	// Allowed says the proxy connected or tried to; Reason is "allowed"
	// or why not (not_declared, not_allowed, not_a_host, bad_port,
	// bad_request); Error is why an allowed connection failed.
	Allowed bool   `json:"allowed"`
	Reason  string `json:"reason"`
	Error   string `json:"error,omitempty"`
}

// NetworkGrant is what a networked execution was given: the hosts its
// skill declared and the operator's --allow-network, both of which a
// destination must match.
type NetworkGrant struct {
	Declared []string `json:"declared"`
	Allowed  []string `json:"allowed"`
	// Log is where its attempts are (network-log.jsonl).
	Log string `json:"log"`
}
