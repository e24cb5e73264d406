package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/artifacts"
)

// Session is one live connection's parts, as a Starter makes them.
type Session struct {
	Transport sdk.Transport
	// Stop ends the server (kills the process) and releases what it
	// held; it is called exactly once.
	Stop func()
	// Exited reports whether the server process is gone (nil for HTTP).
	Exited func() bool
	// Describe says, after the server died, how (exit code, stderr tail).
	Describe func() string
}

// Starter makes a fresh session: a process in the sandbox, or an HTTP
// connection. It is called again for the one restart after a crash.
type Starter func(ctx context.Context) (*Session, error)

// Tool is one tool as the server listed it.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema"`
	// Annotations are the server's hints (readOnlyHint...): context that
	// is recorded and shown, never a grant.
	Annotations *sdk.ToolAnnotations `json:"annotations,omitempty"`
	// SchemaDigest is over the input schema alone; Digest over name,
	// description and schema: what the model is shown.
	SchemaDigest artifacts.Digest `json:"schemaDigest"`
	Digest       artifacts.Digest `json:"digest"`
}

// Info is what the handshake said.
type Info struct {
	Name            string `json:"name"`
	Version         string `json:"version"`
	ProtocolVersion string `json:"protocolVersion"`
	Instructions    string `json:"instructions,omitempty"`
}

// Conn is a client connection to one server, restarted once if it dies.
type Conn struct {
	name  string
	start Starter

	mu       sync.Mutex
	session  *sdk.ClientSession
	live     *Session
	info     Info
	tools    []Tool
	restarts int
	closed   bool
}

// HandshakeTimeout bounds starting a server through its tool list.
const HandshakeTimeout = 30 * time.Second

// Connect starts the server, completes the handshake and lists its tools.
func Connect(ctx context.Context, name string, start Starter) (*Conn, error) {
	c := &Conn{name: name, start: start}
	if err := c.connect(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Conn) connect(ctx context.Context) error {
	hctx, cancel := context.WithTimeout(ctx, HandshakeTimeout)
	defer cancel()
	live, err := c.start(hctx)
	if err != nil {
		return err
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "harness", Version: "2"}, nil)
	session, err := client.Connect(hctx, live.Transport, nil)
	if err != nil {
		live.Stop()
		if how := describe(live); how != "" {
			return &endedError{name: c.name, stage: "the handshake", how: how, err: err}
		}
		return fmt.Errorf("mcp server %s: handshake: %w", c.name, err)
	}
	tools, err := listTools(hctx, session)
	if err != nil {
		session.Close()
		live.Stop()
		if how := describe(live); how != "" {
			return &endedError{name: c.name, stage: "tools/list", how: how, err: err}
		}
		return fmt.Errorf("mcp server %s: tools/list: %w", c.name, err)
	}
	ir := session.InitializeResult()
	info := Info{ProtocolVersion: ir.ProtocolVersion, Instructions: ir.Instructions}
	if ir.ServerInfo != nil {
		info.Name, info.Version = ir.ServerInfo.Name, ir.ServerInfo.Version
	}
	c.session, c.live, c.info, c.tools = session, live, info, tools
	return nil
}

// describe is how a server that ended did so, "" while it runs.
func describe(live *Session) string {
	if live.Describe == nil || live.Exited == nil || !live.Exited() {
		return ""
	}
	return live.Describe()
}

// endedError is a server that ended before it answered: what it said on
// its way out is the reason, not the transport's closed pipe (which it
// wraps, unprinted).
type endedError struct {
	name, stage, how string
	err              error
}

func (e *endedError) Error() string {
	return fmt.Sprintf("mcp server %s ended during %s: %s", e.name, e.stage, e.how)
}

func (e *endedError) Unwrap() error { return e.err }

// A server's tool list is held whole, digested, recorded and offered to
// the model: a server that pages on and on (its author's code) is refused
// once its list passes these, rather than filling memory until the
// handshake's timeout.
const (
	maxTools     = 1024
	maxToolBytes = 16 << 20
)

func listTools(ctx context.Context, s *sdk.ClientSession) ([]Tool, error) {
	var out []Tool
	size := 0
	for t, err := range s.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		schema, err := json.Marshal(t.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("tool %s: schema: %w", t.Name, err)
		}
		size += len(t.Name) + len(t.Description) + len(schema)
		if t.Annotations != nil {
			size += len(t.Annotations.Title)
		}
		if len(out) == maxTools || size > maxToolBytes {
			return nil, fmt.Errorf("the server lists more than %d tools or %d MiB of names, titles, descriptions and schemas: harness offers a model no more than that", maxTools, maxToolBytes>>20)
		}
		tool := ToolOf(t.Name, t.Description, schema)
		tool.Annotations = t.Annotations
		out = append(out, tool)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// ToolOf is a tool with its digests: the schema in canonical form, its
// digest, and the digest of name, description and schema.
func ToolOf(name, description string, schema json.RawMessage) Tool {
	schema = canonical(schema)
	h := artifacts.NewHasher()
	h.WriteField(name)
	h.WriteField(description)
	h.WriteField(string(schema))
	return Tool{Name: name, Description: description, InputSchema: schema, SchemaDigest: artifacts.DigestBytes(schema), Digest: h.Digest()}
}

// canonical re-encodes JSON with sorted keys, so a digest does not depend
// on the order a server happens to write.
func canonical(b []byte) []byte {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return b
	}
	out, err := json.Marshal(v)
	if err != nil {
		return b
	}
	return out
}

// Info is what the server said in the handshake.
func (c *Conn) Info() Info { c.mu.Lock(); defer c.mu.Unlock(); return c.info }

// Tools are the tools the server listed at (re)start.
func (c *Conn) Tools() []Tool { c.mu.Lock(); defer c.mu.Unlock(); return c.tools }

// Alive reports whether the server is running (not dead past its restart,
// not closed).
func (c *Conn) Alive() bool { c.mu.Lock(); defer c.mu.Unlock(); return c.session != nil }

// Restarts counts restarts after a crash (at most one).
func (c *Conn) Restarts() int { c.mu.Lock(); defer c.mu.Unlock(); return c.restarts }

// Result is a call's outcome as the server gave it.
type Result struct {
	Text       string          // the text content, joined
	Structured json.RawMessage // structuredContent, if any
	IsError    bool            // the tool reported an error
	Other      []string        // kinds of non-text content left out
}

// ErrCrashed is a call that the server died during (or before).
var ErrCrashed = errors.New("mcp server crashed")

// Call calls tool with args. A server that died is restarted once (the
// call itself is not repeated: it may have had effects); after that a
// dead server stays dead and every call says so.
func (c *Conn) Call(ctx context.Context, tool string, args json.RawMessage) (*Result, error) {
	c.mu.Lock()
	session, live := c.session, c.live
	c.mu.Unlock()
	if session == nil {
		return nil, fmt.Errorf("%w: %s is not running (it crashed and its one restart was used)", ErrCrashed, c.name)
	}
	res, err := session.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if live.Exited != nil && waitExited(live.Exited) {
			why := describe(live)
			rerr := c.restart(ctx, session)
			if rerr != nil {
				return nil, fmt.Errorf("%w: %s died during the call: %s; restart failed: %v", ErrCrashed, c.name, why, rerr)
			}
			return nil, fmt.Errorf("%w: %s died during the call: %s; it was restarted, the call was not repeated", ErrCrashed, c.name, why)
		}
		return nil, err
	}
	out := &Result{IsError: res.IsError}
	var texts []string
	for _, ct := range res.Content {
		if t, ok := ct.(*sdk.TextContent); ok {
			texts = append(texts, t.Text)
		} else {
			out.Other = append(out.Other, fmt.Sprintf("%T", ct))
		}
	}
	out.Text = strings.Join(texts, "\n")
	if res.StructuredContent != nil {
		out.Structured, _ = json.Marshal(res.StructuredContent)
	}
	return out, nil
}

// waitExited gives a dying process a moment to be reaped: the pipe closes
// before the exit is seen.
func waitExited(exited func() bool) bool {
	for i := 0; i < 50; i++ {
		if exited() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

func (c *Conn) restart(ctx context.Context, dead *sdk.ClientSession) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.session != dead || c.closed {
		return nil // someone else restarted or closed it
	}
	dead.Close()
	c.live.Stop()
	c.session, c.live = nil, nil
	if c.restarts >= 1 {
		return errors.New("the one restart was already used")
	}
	c.restarts++
	before := c.tools
	if err := c.connect(ctx); err != nil {
		return err
	}
	if !sameTools(before, c.tools) {
		c.session.Close()
		c.live.Stop()
		c.session, c.live = nil, nil
		return errors.New("after the restart it offered different tools; it was stopped")
	}
	return nil
}

func sameTools(a, b []Tool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Digest != b[i].Digest {
			return false
		}
	}
	return true
}

// Close ends the session and stops the server.
func (c *Conn) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.session != nil {
		c.session.Close()
		c.live.Stop()
		c.session, c.live = nil, nil
	}
}
