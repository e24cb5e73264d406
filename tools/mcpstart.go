package tools

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/grant"
	"github.com/harness-dev/harness/mcp"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/scripts"
	"github.com/harness-dev/harness/skills"
	"github.com/harness-dev/harness/workspace"
)

// Starting one MCP server: a skill's in the sandbox from its verified
// copy, an operator's as the operator's own program or over HTTP.

// connect starts one server: a skill's inside the sandbox from its staged
// copy, an operator's as the operator's own program.
func (h *MCPHub) connect(ctx context.Context, key string, srv mcp.Server, skill *skills.Skill, rec *record.MCPServer) (_ *mcp.Conn, err error) {
	passed := func(n string) (string, bool) {
		if !slices.Contains(h.cfg.PassEnv, n) {
			return "", false
		}
		if skill != nil && !declaresEnv(skill, n) {
			return "", false
		}
		return h.cfg.Lookup(n)
	}
	switch srv.Transport() {
	case mcp.TransportStdio:
	default:
		if skill != nil {
			return nil, &scripts.Refusal{Code: "mcp_remote_refused", Msg: fmt.Sprintf("skill %s declares a remote MCP server (%s); only the operator can configure remote servers (--mcp-config)", skill.Name, srv.URL)}
		}
		headers, missing := srv.HeaderValues(passed)
		if len(missing) > 0 {
			return nil, &scripts.Refusal{Code: "mcp_env_missing", Msg: fmt.Sprintf("MCP server %s sends headers from %s: pass it with --pass-env NAME (and set it)", key, strings.Join(missing, ", "))}
		}
		rec.PassedEnv = srv.Passed()
		start := func(ctx context.Context) (*mcp.Session, error) {
			return &mcp.Session{Transport: &sdk.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: headerClient(headers)}, Stop: func() {}}, nil
		}
		t0 := time.Now()
		c, err := mcp.Connect(ctx, key, start)
		rec.HandshakeMs = time.Since(t0).Milliseconds()
		return c, err
	}
	base := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "LANG=C.UTF-8", "NO_COLOR=1", "HARNESS_RUN_ID=" + h.cfg.RunID}
	// A reference that may not pass (not declared by the skill, not
	// passed by the operator) or is not set is left out, and recorded:
	// the server starts without it, as it would in a bare environment.
	env, missing := srv.Environ(base, passed)
	rec.WithheldEnv = nonNil(missing)
	for _, kv := range env[len(base):] {
		n, _, _ := strings.Cut(kv, "=")
		rec.EnvNames = append(rec.EnvNames, n)
	}
	rec.PassedEnv = nonNil(srv.Passed())
	ws := h.cfg.Workspace
	cwdRel := "."
	if srv.Cwd != "" {
		var err error
		if cwdRel, err = ws.Resolve(srv.Cwd); err != nil {
			pr := workspace.AsRefusal(err)
			return nil, &scripts.Refusal{Code: pr.Code, Msg: "cwd: " + pr.Msg}
		}
	}
	var spec scripts.Spec
	backend := scripts.BackendNone
	if skill == nil {
		// The operator's own program, started as the operator configured
		// it: on the host, with the environment cleared.
		spec = scripts.Spec{Argv: append([]string{srv.Command}, srv.Args...), Env: env, Path: os.Getenv("PATH"), Cwd: filepath.Join(ws.Host, cwdRel)}
		if strings.Contains(srv.Command, "/") {
			// A relative command is the operator's path from where harness
			// started; programs are looked up only in absolute directories.
			dir, err := filepath.Abs(filepath.Dir(srv.Command))
			if err != nil {
				return nil, err
			}
			spec.Argv[0], spec.Path = filepath.Base(srv.Command), dir
		}
	} else {
		if h.cfg.Probe != nil {
			return nil, &scripts.Refusal{Code: "sandbox_unavailable", Msg: fmt.Sprintf("no sandbox can start skill %s's MCP server on this machine (%v); nothing was started", skill.Name, h.cfg.Probe)}
		}
		backend = h.cfg.Backend
		if spec, rec.Grant, err = h.skillSpec(skill, srv, env, cwdRel, &rec.ResolvedArgs); err != nil {
			return nil, err
		}
		// The server's environment comes from its mcp.json references,
		// which pass only what the skill declares and the operator passes.
		rec.Grant.Env = nonNil(rec.EnvNames)
		var stop func()
		if spec.Egress, rec.Network, stop, err = h.cfg.Network.egressFor(skill, "mcp:"+key, backend); err != nil {
			return nil, err
		}
		// The proxy outlives this call when the server started.
		defer func() {
			if err != nil {
				stop()
				return
			}
			h.mu.Lock()
			h.proxies = append(h.proxies, stop)
			h.mu.Unlock()
		}()
	}
	rec.Sandbox = string(backend)
	start := func(ctx context.Context) (*mcp.Session, error) {
		// The server lives until the hub stops it (run end, interrupt,
		// restart), not until the handshake or the call that started it
		// returns.
		p, err := scripts.Start(context.WithoutCancel(ctx), backend, spec)
		if err != nil {
			return nil, err
		}
		rec.Argv, rec.RunAs = p.Argv, p.RunAs
		exited := func() bool {
			select {
			case <-p.Done():
				return true
			default:
				return false
			}
		}
		return &mcp.Session{
			Transport: &sdk.IOTransport{Reader: p.Stdout, Writer: p.Stdin},
			Stop:      p.Stop,
			Exited:    exited,
			Describe: func() string {
				code, sig, mem, stderr := p.Exit()
				s := fmt.Sprintf("exit %d", code)
				if sig != "" {
					s = "signal " + sig
				}
				if mem {
					s += ", over its memory cap"
				}
				// The server's own last words first: they say why.
				if tail := lastLines(stderr, 20); tail != "" {
					s = tail + "\n(" + s + ")"
				}
				return s
			},
		}, nil
	}
	t0 := time.Now()
	c, err := mcp.Connect(ctx, key, start)
	rec.HandshakeMs = time.Since(t0).Milliseconds()
	return c, err
}

// lastLines are the last n lines of a server's stderr, each cut to 200
// bytes and stripped of control characters: enough to see why it died.
func lastLines(b []byte, n int) string {
	text := strings.TrimSpace(string(b))
	if text == "" {
		return ""
	}
	lines := strings.Split(text, "\n")
	lines = lines[max(0, len(lines)-n):]
	for i, l := range lines {
		if len(l) > 200 {
			l = l[:200]
		}
		lines[i] = strings.Map(func(r rune) rune {
			if r < 0x20 || r == 0x7f {
				return ' '
			}
			return r
		}, l)
	}
	return strings.Join(lines, "\n")
}

func declaresEnv(s *skills.Skill, name string) bool {
	p, err := skills.PermissionsOf(s.Frontmatter)
	return err == nil && p != nil && slices.Contains(p.Env, name)
}

// skillSpec builds the sandboxed command of a skill's server: the command
// is a runtime on PATH (node, python3, deno...) or an executable file
// under the skill's scripts/ (${SKILL_DIR}/scripts/... or ./scripts/...),
// which must be one of its verified files; ${SKILL_DIR} in args is the skill's directory as the
// sandbox sees it.
func (h *MCPHub) skillSpec(s *skills.Skill, srv mcp.Server, env []string, cwdRel string, resolved *[]string) (scripts.Spec, *record.Grant, error) {
	ws := h.cfg.Workspace
	skillDir, cwd := s.SandboxSkillDir, ws.SandboxPath(cwdRel)
	stage, err := h.cfg.Stager.Dir(s)
	if err != nil {
		return scripts.Spec{}, nil, err
	}
	if h.cfg.Backend != scripts.BackendBwrap {
		// Without a mount namespace the server sees host paths.
		skillDir, cwd = stage, filepath.Join(ws.Host, cwdRel)
	}
	expand := func(a string) string { return strings.ReplaceAll(a, "${SKILL_DIR}", skillDir) }
	argv := []string{srv.Command}
	for _, a := range srv.Args {
		a = expand(a)
		// An argument that names a file of the skill ("server.py") means
		// that file, wherever the server's working directory is.
		if rel := path2rel(a); rel != "" && !strings.HasPrefix(a, "-") {
			if _, ok := s.Resource(rel); ok {
				*resolved = append(*resolved, a+" → "+skillDir+"/"+rel)
				a = skillDir + "/" + rel
			}
		}
		argv = append(argv, a)
	}
	path := os.Getenv("PATH")
	if cmd := strings.TrimPrefix(srv.Command, "${SKILL_DIR}/"); cmd != srv.Command || strings.Contains(srv.Command, "/") {
		rel := path2rel(cmd)
		if res, ok := s.Resource(rel); rel == "" || !strings.HasPrefix(rel, "scripts/") || !ok || res.Executable == nil || !*res.Executable {
			return scripts.Spec{}, nil, &scripts.Refusal{Code: "mcp_command_invalid", Msg: fmt.Sprintf("MCP server command %q: a server the skill ships is an executable file under its scripts/ directory (e.g. ./scripts/server), or a runtime on PATH with the file as an argument (node, python3, deno)", srv.Command)}
		}
		dir, _, err := h.cfg.Stager.Stage(s, rel)
		if err != nil {
			return scripts.Spec{}, nil, err
		}
		res, _ := s.Resource(rel)
		switch res.Runtime {
		case scripts.RuntimeBash, scripts.RuntimeSh, scripts.RuntimePython, scripts.RuntimeNode, scripts.RuntimeDeno:
			// A script: its runtime runs the verified copy, as
			// run_skill_script runs one (the shebang's interpreter path
			// is not trusted to exist in the sandbox).
			if argv, err = scripts.Command(res.Runtime, res.Shebang, skillDir+"/"+rel, argv[1:]); err != nil {
				return scripts.Spec{}, nil, err
			}
		default:
			// The staged file itself: what was verified is what runs.
			argv[0], path = filepath.Base(rel), filepath.Join(dir, filepath.Dir(filepath.FromSlash(rel)))
		}
	}
	g, err := grant.For(grant.Request{Skill: s, Workspace: ws, Backend: h.cfg.Backend, Git: h.cfg.Git})
	if err != nil {
		return scripts.Spec{}, nil, err
	}
	h.addWriter(g)
	hide, hideHost := hiddenPaths(ws)
	return scripts.Spec{
		Argv: argv, Env: append(env, "SKILL_NAME="+s.Name, "SKILL_DIR="+skillDir), Path: path, Cwd: cwd,
		Mounts:    []scripts.Mount{g.Mount, {Host: stage, Sandbox: s.SandboxSkillDir}},
		LimitExec: g.LimitExec, Exec: g.Exec, ExecTemp: g.ExecTemp,
		Hide: hide, HideHost: hideHost, Helper: h.cfg.Helper,
		Limits: scripts.Limits{Memory: h.cfg.MemoryLimit, CPUSeconds: 3600},
	}, &g.Record, nil
}

// path2rel cleans a skill-relative command path; "" when it leaves the
// skill or is absolute.
func path2rel(p string) string {
	p = strings.TrimPrefix(p, "./")
	if p == "" || strings.HasPrefix(p, "/") || path.Clean(p) != p || skills.CheckResourcePath(p) != nil {
		return ""
	}
	return p
}

// headerClient sends the operator's headers with every request, to the
// URL the operator named only: a redirect is not followed (the answer is
// the 3xx, which the MCP client reports), since the header transport would
// put the headers, a bearer token among them, on the request to wherever
// the server points.
func headerClient(headers map[string]string) *http.Client {
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if len(headers) > 0 {
		c.Transport = headerTransport{headers: headers, next: http.DefaultTransport}
	}
	return c
}

type headerTransport struct {
	headers map[string]string
	next    http.RoundTripper
}

func (t headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	return t.next.RoundTrip(req)
}
