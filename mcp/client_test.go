package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/testenv"
)

// hostStarter runs the test server as a plain child process: this file
// tests the client; tools/ tests the same server inside the sandbox.
func hostStarter(t testing.TB, bin string, env ...string) (Starter, *int) {
	starts := new(int)
	return func(ctx context.Context) (*Session, error) {
		*starts++
		cmd := exec.Command(bin)
		cmd.Env = env
		cmd.Dir = t.TempDir()
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return nil, err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		exited := func() bool {
			select {
			case <-done:
				return true
			default:
				return false
			}
		}
		return &Session{
			Transport: &sdk.IOTransport{Reader: stdout, Writer: stdin},
			Stop:      func() { stdin.Close(); cmd.Process.Kill(); <-done },
			Exited:    exited,
			Describe:  func() string { return "exit " + cmd.ProcessState.String() },
		}, nil
	}, starts
}

func TestConn(t *testing.T) {
	bin := testenv.BuildProgram(t, "mcp/testdata/mcpserver", "", "")
	ctx := context.Background()
	start, starts := hostStarter(t, bin, "MCPSERVER_EXTRA=")
	c, err := Connect(ctx, "srv", start)
	testenv.Must(t, err)
	defer c.Close()

	if info := c.Info(); info.Name != "harness-test-server" || info.Version != "1.2.3" || info.ProtocolVersion == "" {
		t.Fatalf("info %+v", info)
	}
	var names []string
	for _, tl := range c.Tools() {
		names = append(names, tl.Name)
		if !strings.HasPrefix(string(tl.SchemaDigest), "blake3:") || tl.Digest == tl.SchemaDigest {
			t.Fatalf("digests %+v", tl)
		}
	}
	if got := strings.Join(names, ","); got != "crash,echo,fetch,slow,write" {
		t.Fatalf("tools %s", got)
	}
	if w := c.Tools()[4]; w.Annotations == nil || !w.Annotations.ReadOnlyHint {
		t.Fatalf("the server's (false) hint is kept as it said it: %+v", w.Annotations)
	}

	res, err := c.Call(ctx, "echo", json.RawMessage(`{"text":"hi"}`))
	testenv.Must(t, err)
	if !strings.HasPrefix(res.Text, "echo: hi") || res.IsError {
		t.Fatalf("echo %+v", res)
	}
	// An argument the schema refuses is the tool's error, not a crash.
	res, err = c.Call(ctx, "echo", json.RawMessage(`{"text":5}`))
	if err == nil && !res.IsError {
		t.Fatalf("bad arguments accepted: %+v", res)
	}

	// The slow tool stops with the caller's context.
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_, err = c.Call(cctx, "slow", json.RawMessage(`{"millis":5000}`))
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("slow: %v", err)
	}

	// A crash is an error; the server is restarted once for later calls.
	_, err = c.Call(ctx, "crash", json.RawMessage(`{}`))
	if !errors.Is(err, ErrCrashed) || !strings.Contains(err.Error(), "restarted") {
		t.Fatalf("crash: %v", err)
	}
	if *starts != 2 || c.Restarts() != 1 {
		t.Fatalf("starts %d restarts %d", *starts, c.Restarts())
	}
	if res, err := c.Call(ctx, "echo", json.RawMessage(`{"text":"again"}`)); err != nil || !strings.HasPrefix(res.Text, "echo: again") {
		t.Fatalf("after restart: %v %+v", err, res)
	}
	// A second crash has no restart left.
	_, err = c.Call(ctx, "crash", json.RawMessage(`{}`))
	if !errors.Is(err, ErrCrashed) || !strings.Contains(err.Error(), "restart failed") {
		t.Fatalf("second crash: %v", err)
	}
	if _, err = c.Call(ctx, "echo", json.RawMessage(`{"text":"x"}`)); !errors.Is(err, ErrCrashed) {
		t.Fatalf("dead server answered: %v", err)
	}
}

func TestToolDigestsFollowTheList(t *testing.T) {
	bin := testenv.BuildProgram(t, "mcp/testdata/mcpserver", "", "")
	ctx := context.Background()
	a, _ := hostStarter(t, bin)
	b, _ := hostStarter(t, bin, "MCPSERVER_EXTRA=1")
	ca, err := Connect(ctx, "a", a)
	testenv.Must(t, err)
	defer ca.Close()
	cb, err := Connect(ctx, "b", b)
	testenv.Must(t, err)
	defer cb.Close()
	if sameTools(ca.Tools(), cb.Tools()) || len(cb.Tools()) != len(ca.Tools())+1 {
		t.Fatal("an added tool must change the list")
	}
	if ca.Tools()[1].Digest != cb.Tools()[1].Digest {
		t.Fatal("the same tool must keep its digest")
	}
}

func TestHandshakeFailureSaysWhy(t *testing.T) {
	dir := t.TempDir()
	sh := filepath.Join(dir, "notmcp")
	testenv.Must(t, os.WriteFile(sh, []byte("#!/bin/sh\necho 'this is not MCP' >&2\nexit 4\n"), 0o755))
	start, _ := hostStarter(t, sh)
	_, err := Connect(context.Background(), "bad", start)
	if err == nil || !strings.Contains(err.Error(), "mcp server bad") {
		t.Fatalf("err %v", err)
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		bare      bool
		err       string
	}{
		{"stdio", `{"mcpServers":{"fs":{"command":"npx","args":["-y","x"],"env":{"TOKEN":"${GH_TOKEN}","MODE":"fast"},"cwd":"sub"}}}`, false, ""},
		{"http", `{"mcpServers":{"remote":{"url":"https://mcp.example.com/mcp","headers":{"Authorization":"Bearer ${API_TOKEN}"}}}}`, false, ""},
		{"bare map", `{"fs":{"command":"srv"}}`, true, ""},
		{"unknown field", `{"mcpServers":{"fs":{"command":"srv","comand":"x"}}}`, false, "unknown field"},
		{"no servers key", `{"servers":{}}`, false, "unknown field"},
		{"both command and url", `{"mcpServers":{"fs":{"command":"srv","url":"http://x"}}}`, false, "http server has a url and no command"},
		{"bad url", `{"mcpServers":{"fs":{"url":"file:///etc/passwd"}}}`, false, "not http"},
		{"double underscore name", `{"mcpServers":{"a__b":{"command":"srv"}}}`, false, "no \"__\""},
		{"half reference", `{"mcpServers":{"fs":{"command":"srv","env":{"A":"x${B}"}}}}`, false, "whole value"},
		{"bad env name", `{"mcpServers":{"fs":{"command":"srv","env":{"A-B":"1"}}}}`, false, "not a variable name"},
		{"bad type", `{"mcpServers":{"fs":{"command":"srv","type":"sse"}}}`, false, "not stdio or http"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc), tc.bare)
			if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("err %v, want %q", err, tc.err)
			}
		})
	}
	s, _ := Parse([]byte(`{"mcpServers":{"fs":{"command":"srv","env":{"TOKEN":"${GH_TOKEN}","MODE":"fast","HOME_DIR":""}}}}`), false)
	if got := strings.Join(s["fs"].Passed(), ","); got != "GH_TOKEN,HOME_DIR" {
		t.Fatalf("passed %s", got)
	}
	env, missing := s["fs"].Environ([]string{"PATH=/usr/bin"}, func(n string) (string, bool) {
		if n == "GH_TOKEN" {
			return "t0k", true
		}
		return "", false
	})
	if strings.Join(env, " ") != "PATH=/usr/bin MODE=fast TOKEN=t0k" || strings.Join(missing, ",") != "HOME_DIR" {
		t.Fatalf("env %v missing %v", env, missing)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"mcpServers":{"fs":{"command":"srv","env":{"A":"${B}"}}}}`))
	f.Add([]byte(`{"mcpServers":{"r":{"url":"https://x/y","headers":{"H":"Bearer ${T}"}}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Parse(b, false)
		if err != nil {
			return
		}
		for name, srv := range s {
			if check(name, srv) != nil {
				t.Fatalf("accepted an invalid server %q", name)
			}
			srv.Environ(nil, func(string) (string, bool) { return "", false })
		}
	})
}
