package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/grant"
	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/mcp"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/scripts"
	"github.com/harness-dev/harness/skills"
	"github.com/harness-dev/harness/workspace"
)

// MCPConfigFile is a skill's own MCP configuration, in the mcpServers
// shape, beside its SKILL.md.
const MCPConfigFile = "mcp.json"

// MCPSeparator joins a server's key and a tool's name into the name the
// model sees.
const MCPSeparator = "__"

// OperatorServers are the servers of an --mcp-config file.
type OperatorServers struct {
	File    string
	Digest  artifacts.Digest
	Servers map[string]mcp.Server
}

// MCP is what the MCP servers of a run need.
type MCP struct {
	Registry  *skills.Registry
	Active    *Activations
	Workspace *workspace.Workspace
	Stager    *Stager
	// Backend is the sandbox skill servers run in; Probe why none works.
	Backend scripts.Backend
	Probe   error
	Helper  string
	// MemoryLimit caps a server's memory, as for scripts.
	MemoryLimit uint64
	Operator    *OperatorServers
	// PassEnv are the names the operator lets through (--pass-env);
	// Lookup reads them (os.LookupEnv).
	PassEnv []string
	Lookup  func(string) (string, bool)
	// Allowed are --allow-tool entries: key__tool or key__*.
	Allowed []string
	// Effects are --mcp-tool-effect choices by exposed name.
	Effects map[string]loop.Effect
	RunID   string
	Now     func() time.Time
	RunDir  string
	Redact  *artifacts.Redactor
	Journal *artifacts.Journal
	// Network gives servers of skills that declare hosts their egress
	// proxy (nil: no server has network).
	Network *Network
	// Git is the run's index of git control paths: a .git a skill's
	// server makes is removed after each of its calls and when the
	// servers stop (nil: only the read-only paths missing at its start).
	Git *grant.GitIndex
	// Progress tells the operator about starts and failures.
	Progress func(format string, args ...any)
}

// MCPHub starts the servers of active skills and the operator's, and
// offers their allowed tools. Servers start at a turn boundary, when the
// loop asks for tools: a skill activated by load_skill brings its tools
// to the next request.
type MCPHub struct {
	cfg MCP

	mu      sync.Mutex
	started map[string]bool // operator servers by key
	// startedSkills are the skills whose servers were looked at: a skill
	// and an operator's server may share a name.
	startedSkills map[string]bool
	// keys names what claimed each server key: the key decides whose
	// server a tool KEY__TOOL is, so no two servers may share one.
	keys  map[string]string
	conns []*mcpConn
	rec   record.MCPServers
	// proxies are the egress proxies of networked skill servers, which
	// live as long as the hub (a restarted server keeps its proxy).
	proxies []func()
	// reported counts the server records already told to the loop.
	reported int
	// approved reports whether a person approved a call (nil: none
	// was): a deferred server starts for nothing else.
	approved func(callID string) bool
	// sweepMu guards writers, the grants of the skill servers that can
	// write the workspace: what they did to git's control paths is
	// swept after every call of a skill's server and once they stopped.
	sweepMu sync.Mutex
	writers []*grant.Grant
}

// DefaultSkillMCPCallTimeout bounds one call of a skill's MCP server
// whose skill sets no limits.timeout: a server that never answers would
// otherwise hold a run given no --timeout for ever. Scripts have their
// own default (a minute); a server's tool may do more in one call.
const DefaultSkillMCPCallTimeout = 10 * time.Minute

// skillCallTimeout is the bound of one call of a skill's server and
// where it comes from.
func skillCallTimeout(l *skills.ExecLimits) (time.Duration, string) {
	if l != nil && l.Timeout > 0 {
		return l.Timeout, "the skill's limit (metadata.harness.limits.timeout " + l.Timeout.String() + ")"
	}
	return DefaultSkillMCPCallTimeout, "harness's default for a skill's server without metadata.harness.limits.timeout (" + DefaultSkillMCPCallTimeout.String() + ")"
}

type mcpConn struct {
	key, name string
	conn      *mcp.Conn // nil while deferred
	rec       int       // index into rec.Servers
	// timeout bounds one call of a skill's server (0, for the
	// operator's servers: none); timeoutSource says whose it is.
	timeout       time.Duration
	timeoutSource string
	// skill is the name of the skill whose server this is ("" for the
	// operator's).
	skill string
	// deferred is set for a destructive skill's server, which is not
	// started before a call a person approved needs it.
	deferred *deferredServer
}

// NewMCPHub makes the hub; Close stops every server.
func NewMCPHub(cfg MCP) *MCPHub {
	if cfg.Lookup == nil {
		cfg.Lookup = os.LookupEnv
	}
	return &MCPHub{cfg: cfg, started: map[string]bool{}, startedSkills: map[string]bool{}, keys: map[string]string{},
		rec: record.MCPServers{Envelope: artifacts.NewEnvelope(record.TypeMCPServers, record.Version), Servers: []record.MCPServer{}}}
}

// Stop stops every server and then sweeps what those of skills that can
// write did to git's control paths since the last call: a server can
// write from a thread of its own between calls. What it finds fails the
// run (protected_path, or protected_path_not_undone when not all of it
// could be undone).
func (h *MCPHub) Stop() error {
	h.Close()
	code, msg, left := h.sweep("MCP servers of skills, between their last call and their stop,")
	h.sweepMu.Lock()
	h.writers = nil
	h.sweepMu.Unlock()
	if code == "" {
		return nil
	}
	h.progress("%s", msg)
	if len(left) > 0 {
		return notUndone("an MCP server of a skill", left)
	}
	return &outcome.Error{Code: code, Exit: outcome.ExitFailed, Msg: msg + "; the run fails"}
}

// Close stops every server and records them as stopped.
func (h *MCPHub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.conns {
		if c.conn == nil {
			continue
		}
		c.conn.Close()
		if r := &h.rec.Servers[c.rec]; r.Status == "running" {
			r.Status = "stopped"
		}
	}
	h.conns = nil
	for _, stop := range h.proxies {
		stop()
	}
	h.proxies = nil
	if len(h.rec.Servers) > 0 {
		h.write()
	}
}

func (h *MCPHub) write() error {
	return h.cfg.Redact.WriteJSON(filepath.Join(h.cfg.RunDir, record.FileMCPServers), &h.rec)
}

// Tools starts what is due (operator servers, servers of newly active
// skills) and returns the allowed tools of every running server. A server
// the operator allowed tools of (--allow-tool) that cannot start is
// recorded, journaled and returned as an error that ends the run: going on
// without tools the operator asked for would look like success.
func (h *MCPHub) Tools(ctx context.Context) ([]loop.Tool, error) {
	h.startDue(ctx)
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.rec.Servers[h.reported:] {
		if r.Status == "failed" {
			h.reported = len(h.rec.Servers)
			msg := fmt.Sprintf("MCP server %s, whose tools --allow-tool allows, could not start: %s", r.Key, r.Error.Message)
			code := "mcp_server_failed"
			if r.Error.Code == "mcp_key_conflict" {
				code = r.Error.Code
			}
			return nil, &outcome.Error{Code: code, Msg: msg, Exit: outcome.ExitFailed}
		}
	}
	h.reported = len(h.rec.Servers)
	var out []loop.Tool
	for _, c := range h.conns {
		r := h.rec.Servers[c.rec]
		for _, t := range r.Tools {
			if t.Offered {
				out = append(out, &MCPTool{hub: h, c: c, tool: t, schema: h.schemaOf(c, t.Name)})
			}
		}
	}
	return out, nil
}

func (h *MCPHub) schemaOf(c *mcpConn, name string) json.RawMessage {
	list := c.declaredTools()
	if c.conn != nil {
		list = c.conn.Tools()
	}
	for _, t := range list {
		if t.Name == name {
			return t.InputSchema
		}
	}
	return json.RawMessage(`{"type":"object"}`)
}

// Start starts every due server now and returns their records: a resume
// uses it to compare tool lists before the loop runs.
func (h *MCPHub) Start(ctx context.Context) []record.MCPServer {
	h.startDue(ctx)
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.rec.Servers)
}

func (h *MCPHub) startDue(ctx context.Context) {
	type due struct {
		key, name string
		srv       mcp.Server
		skill     *skills.Skill
		file      string
		digest    artifacts.Digest
		err       error
	}
	var todo []due
	h.mu.Lock()
	if op := h.cfg.Operator; op != nil {
		for _, name := range slices.Sorted(maps.Keys(op.Servers)) {
			if !h.started[name] && h.keyAllowed(name) {
				h.started[name] = true
				d := due{key: name, name: name, srv: op.Servers[name], file: op.File, digest: op.Digest}
				d.err = h.claimKey(name, fmt.Sprintf("the operator's server %s (--mcp-config)", name))
				todo = append(todo, d)
			}
		}
	}
	if h.cfg.Registry != nil && h.cfg.Active != nil {
		for _, a := range h.cfg.Active.List() {
			if h.startedSkills[a.Name] {
				continue
			}
			h.startedSkills[a.Name] = true
			s, ok := h.cfg.Registry.Lookup(a.Name)
			if !ok {
				continue
			}
			servers, file, digest, err := SkillServers(s, func(rel string) ([]byte, error) { return h.readVerified(s, rel) })
			if err != nil {
				todo = append(todo, due{key: s.Name, name: "", skill: s, file: file, digest: digest, err: err})
				continue
			}
			names := slices.Sorted(maps.Keys(servers))
			for _, n := range names {
				// One server: its tools are <skill>__<tool>; more than one:
				// <skill>-<server>__<tool>, so that names stay unique.
				key := s.Name
				if len(names) > 1 {
					key = s.Name + "-" + n
				}
				if h.keyAllowed(key) {
					d := due{key: key, name: n, srv: servers[n], skill: s, file: file, digest: digest}
					d.err = h.claimKey(key, fmt.Sprintf("server %s of skill %s", n, s.Name))
					todo = append(todo, d)
				}
			}
		}
	}
	h.mu.Unlock()
	for _, d := range todo {
		rec := record.MCPServer{Key: d.key, Name: d.name, Origin: "operator", ConfigFile: d.file, ConfigDigest: d.digest,
			Transport: d.srv.Transport(), URL: d.srv.URL, Cwd: d.srv.Cwd, EnvNames: []string{}, PassedEnv: []string{}, WithheldEnv: []string{},
			Tools: []record.MCPTool{}, StartedAt: h.cfg.Now().UTC(), Sandbox: string(scripts.BackendNone)}
		if d.srv.Command != "" {
			rec.Command = append([]string{d.srv.Command}, d.srv.Args...)
		}
		if d.skill != nil {
			rec.Origin, rec.Skill, rec.SkillDigest, rec.Sandbox = "skill", d.skill.Name, d.skill.Digest, string(h.cfg.Backend)
		}
		var conn *mcp.Conn
		var later *deferredServer
		err := d.err
		switch {
		case err != nil:
		case d.skill != nil && skills.Destructive(d.skill.Frontmatter):
			// A destructive skill's server is its code running: it waits
			// for the first call a person approved (ensureStarted), and
			// until then the model is offered what the skill declares.
			if len(d.srv.Tools) == 0 {
				err = &scripts.Refusal{Code: "mcp_tools_undeclared", Msg: fmt.Sprintf("skill %s is marked destructive, so its MCP server %s starts only once a person approved a call of it; declare the tools it offers (\"tools\": [{\"name\", \"description\", \"inputSchema\"}] beside its command) so that they can be offered before it starts", d.skill.Name, d.name)}
				break
			}
			later = &deferredServer{srv: d.srv, skill: d.skill, declared: d.srv.Declared()}
		default:
			conn, err = h.connect(ctx, d.key, d.srv, d.skill, &rec)
		}
		switch {
		case err != nil:
			rec.Status = "failed"
			rec.Error = mcpError(err)
		case later != nil:
			rec.Status = "deferred"
			h.describe(&rec, later.declared)
		default:
			rec.Status = "running"
			h.describeInfo(&rec, conn)
			h.describe(&rec, conn.Tools())
		}
		h.mu.Lock()
		h.rec.Servers = append(h.rec.Servers, rec)
		if conn != nil || later != nil {
			c := &mcpConn{key: d.key, name: d.name, conn: conn, rec: len(h.rec.Servers) - 1, deferred: later}
			if d.skill != nil {
				c.skill = d.skill.Name
				l, _ := skills.LimitsOf(d.skill.Frontmatter)
				c.timeout, c.timeoutSource = skillCallTimeout(l)
			}
			h.conns = append(h.conns, c)
		}
		werr := h.write()
		h.mu.Unlock()
		switch {
		case err != nil:
			// Tools reports it, as the error that ends the run.
		case later != nil:
			h.progress("MCP server %s waits for an approved call before it starts (skill %s is destructive; %d declared tools offered)", rec.Key, rec.Skill, len(rec.Tools))
		default:
			h.progress("MCP server %s started (%s %s, %d tools, %d ms)", rec.Key, rec.ServerName, rec.ServerVersion, len(rec.Tools), rec.HandshakeMs)
		}
		h.journalServer(rec, err, later != nil)
		_ = werr // the journal holds the event; the artifact is rewritten on the next change
	}
}

// claimKey reserves key for owner, or refuses it when another server
// holds it: a skill a with servers b and c has keys a-b and a-c, which a
// skill or an operator's server named a-b would share, and the approval
// gate and the call must never disagree on whose server a tool is.
func (h *MCPHub) claimKey(key, owner string) error {
	if had, ok := h.keys[key]; ok {
		return &scripts.Refusal{Code: "mcp_key_conflict", Msg: fmt.Sprintf("%s would offer its tools as %s__TOOL, the names %s already offers its tools under; rename the server or the skill so that the keys differ, or leave one of them out of the run", owner, key, had)}
	}
	h.keys[key] = owner
	return nil
}

// journalServer records a server's start, failure or deferral.
func (h *MCPHub) journalServer(rec record.MCPServer, err error, deferred bool) {
	if h.cfg.Journal == nil {
		return
	}
	ev := record.MCPServerEvent{Key: rec.Key, Name: rec.Name, Origin: rec.Origin, ServerName: rec.ServerName, Version: rec.ServerVersion,
		Tools: []record.MCPToolDigest{}, ToolsDigest: rec.ToolsDigest, Error: rec.Error, Deferred: deferred}
	for _, t := range rec.Tools {
		ev.Tools = append(ev.Tools, record.MCPToolDigest{Name: t.Name, Digest: t.Digest})
	}
	kind := record.EventMCPServerStarted
	if err != nil {
		kind = record.EventMCPServerFailed
	}
	h.cfg.Journal.Append(kind, ev)
}

// SkillOf names the skill whose server offers the exposed tool KEY__TOOL
// ("" for an operator's server), and whether a server offers it: a skill
// with several servers has keys <skill>-<server>, which are not its name,
// and a key is held by one server only (claimKey).
func (h *MCPHub) SkillOf(exposed string) (string, bool) {
	key, _, ok := strings.Cut(exposed, MCPSeparator)
	if !ok {
		return "", false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.conns {
		if c.key == key {
			return c.skill, true
		}
	}
	return "", false
}

func (h *MCPHub) progress(format string, args ...any) {
	if h.cfg.Progress != nil {
		h.cfg.Progress(format, args...)
	}
}

func mcpError(err error) *outcome.Record {
	var ref *scripts.Refusal
	if errors.As(err, &ref) {
		return &outcome.Record{Code: ref.Code, Message: ref.Msg}
	}
	var sref *skills.Refusal
	if errors.As(err, &sref) {
		return &outcome.Record{Code: sref.Code, Message: sref.Msg}
	}
	return &outcome.Record{Code: "mcp_server_failed", Message: err.Error()}
}

// readVerified reads a skill file from the staged copy, which holds only
// bytes that matched the snapshot.
func (h *MCPHub) readVerified(s *skills.Skill, rel string) ([]byte, error) {
	return readStaged(h.cfg.Stager, s, rel)
}

// readStaged reads a file of a skill's verified copy.
func readStaged(stager *Stager, s *skills.Skill, rel string) ([]byte, error) {
	dir, _, err := stager.Stage(s, rel)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return root.ReadFile(rel)
}

// keyAllowed reports whether any tool of the server with this key is
// allowed: a server none of whose tools may be called is never started.
func (h *MCPHub) keyAllowed(key string) bool {
	return slices.ContainsFunc(h.cfg.Allowed, func(a string) bool { return strings.HasPrefix(a, key+MCPSeparator) })
}

func (h *MCPHub) noteRestart(c *mcpConn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.rec.Servers[c.rec].Restarts = c.conn.Restarts()
	h.write()
}

func (h *MCPHub) noteCrash(c *mcpConn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !c.conn.Alive() {
		h.rec.Servers[c.rec].Status = "crashed"
	}
	h.write()
}
