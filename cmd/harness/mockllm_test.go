package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/testenv"
)

// mockLLMConfig answers by what the request holds, under the server's own
// rules (the last that matches wins): a fixed answer when the operator's
// task reached it, another when it did not, and a 401 for a task that asks
// for one. (Its templates insert text unescaped, so the answer does not
// echo the task, which spans lines.)
const mockLLMConfig = `rules:
  - path: "/v1/chat/completions"
    method: "POST"
    match: "@"
    response:
      status: 200
      content: |
        {"id": "chatcmpl-1", "object": "chat.completion", "model": "{{jmes request body.model}}",
         "choices": [{"index": 0, "message": {"role": "assistant", "content": "the task did not arrive"}, "finish_reason": "stop"}],
         "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}}
  - path: "/v1/chat/completions"
    method: "POST"
    match: "contains(body.messages[-1].content, 'say hi to the mock')"
    response:
      status: 200
      content: |
        {"id": "chatcmpl-2", "object": "chat.completion", "model": "{{jmes request body.model}}",
         "choices": [{"index": 0, "message": {"role": "assistant", "content": "heard you, said mock-llm"}, "finish_reason": "stop"}],
         "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}}
  - path: "/v1/chat/completions"
    match: "contains(body.messages[-1].content, 'error-401')"
    response:
      status: 401
      content: |
        {"error": {"message": "Incorrect API key provided.", "type": "invalid_request_error", "code": "invalid_api_key"}}
`

// TestAgainstThirdPartyMockServer runs harness against @dwmkerr/mock-llm,
// an OpenAI-compatible mock server this project did not write: our own
// scripted server shares our own reading of the API, this one does not.
func TestAgainstThirdPartyMockServer(t *testing.T) {
	mock := testenv.MockLLM(t)

	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "mock-llm.yaml"), []byte(mockLLMConfig), 0o644)
	base := testenv.StartNode(t, "mock-llm", dir, func(port int) ([]string, []string) {
		return []string{mock}, []string{"HOST=127.0.0.1", fmt.Sprintf("PORT=%d", port)}
	})

	bin := harnessBin(t)
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a"), 0o644)
	run := func(prompt, id string) (string, string, int) {
		cmd := exec.Command(bin, "run", "--workspace", ws, "--model", "gpt-4", "--base-url", base+"/v1", "--prompt", prompt,
			"--run-id", id, "--artifacts-dir", filepath.Join(dir, "runs"), "--max-retries", "0")
		cmd.Env = append(os.Environ(), "HARNESS_API_KEY=sk-third-party")
		var so, se bytes.Buffer
		cmd.Stdout, cmd.Stderr = &so, &se
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		return so.String(), se.String(), code
	}
	out, stderr, code := run("say hi to the mock", "ok")
	if code != 0 || strings.TrimSpace(out) != "heard you, said mock-llm" {
		t.Errorf("a run against mock-llm: exit %d\nstdout %s\nstderr %s", code, out, stderr)
	}
	res, _ := os.ReadFile(filepath.Join(dir, "runs", "ok", "result.json"))
	if !bytes.Contains(res, []byte(`"totalTokens": 15`)) || !bytes.Contains(res, []byte(`"usageSource": "provider"`)) {
		t.Errorf("usage from mock-llm not recorded:\n%s", res)
	}
	_, stderr, code = run("please error-401", "auth")
	if code != 2 || !strings.Contains(stderr, "Incorrect API key provided.") {
		t.Errorf("a 401 from mock-llm: exit %d, stderr %s", code, stderr)
	}
}
