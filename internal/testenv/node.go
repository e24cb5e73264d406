package testenv

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// MockLLM is the path of @dwmkerr/mock-llm, an OpenAI-compatible mock
// server this project did not write: on PATH, or where the tools task
// installs it (.tools/bin of the module). The test needs it and node.
func MockLLM(t *testing.T) string {
	t.Helper()
	mock, err := exec.LookPath("mock-llm")
	if err != nil {
		if root, rerr := moduleRoot(); rerr == nil {
			local := filepath.Join(root, ".tools", "bin", "mock-llm")
			if _, serr := os.Stat(local); serr == nil {
				mock, err = local, nil
			}
		}
	}
	Need(t, "mock-llm (npm @dwmkerr/mock-llm)", err)
	_, err = exec.LookPath("node")
	Need(t, "node", err)
	return mock
}

// StartNode starts a third-party server under node in dir on a free
// loopback port (args gives its arguments and environment for the port),
// waits until its /health answers, and returns its base URL; the server
// is killed when the test ends. Servers this project did not write are
// how tests check harness against more than its own reading of an API.
func StartNode(t *testing.T, name, dir string, args func(port int) (argv, env []string)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	argv, env := args(port)
	srv := exec.Command("node", argv...)
	srv.Dir, srv.Env = dir, append(os.Environ(), env...)
	var log bytes.Buffer
	srv.Stdout, srv.Stderr = &log, &log
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	if err := waitHealthy(base + "/health"); err != nil {
		t.Fatalf("%s did not come up: %v\n%s", name, err, log.String())
	}
	return base
}

func waitHealthy(url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
