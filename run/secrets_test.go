package run

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/harness-dev/harness/internal/testenv"
	"github.com/harness-dev/harness/outcome"
)

// echoKey is served back by the provider in every position a secret can
// reach harness from the outside.
const echoKey = "sk-echo-3f9a8b7c6d5e4f3a2b1c0d9e8f7a"

// TestKeyNeverWritten serves the key back: in error bodies of every status
// (OpenAI-shaped and plain, with and without "Bearer"), in the model's
// answer, in a file a tool reads, and in the base URL's path. Not one byte
// harness writes (run directory, journal stream, stderr) may hold it.
func TestKeyNeverWritten(t *testing.T) {
	statuses := []int{400, 401, 403, 404, 429, 500, 503}
	var mu sync.Mutex
	requests := 0
	mode := 0 // index into statuses; len(statuses) = a normal conversation
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests++
		m, n := mode, requests
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "0")
		if !strings.HasPrefix(r.URL.Path, "/"+echoKey+"/v1/") {
			w.WriteHeader(404)
			return
		}
		if m < len(statuses) {
			w.WriteHeader(statuses[m])
			if n%2 == 0 {
				fmt.Fprintf(w, "upstream said: Authorization: Bearer %s rejected", echoKey)
				return
			}
			fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s","type":"invalid_request_error","code":"invalid_api_key"}}`, echoKey)
			return
		}
		var req struct {
			Messages []json.RawMessage `json:"messages"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		var msg map[string]any
		if len(req.Messages) < 4 {
			msg = map[string]any{"role": "assistant", "content": "", "tool_calls": []any{map[string]any{"id": "r1", "type": "function",
				"function": map[string]any{"name": "read_file", "arguments": `{"path":"key.txt"}`}}}}
		} else {
			msg = map[string]any{"role": "assistant", "content": "the key is " + echoKey}
		}
		json.NewEncoder(w).Encode(map[string]any{"id": "x", "object": "chat.completion", "model": "m",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": "stop"}},
			"usage":   map[string]any{"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})
	}))
	defer srv.Close()

	ws := demoWorkspace(t)
	testenv.WriteTree(t, ws, map[string]string{"key.txt": "OPENAI_API_KEY=" + echoKey + "\n"})
	var written bytes.Buffer
	run := func(id string) error {
		o := baseOptions(ws)
		o.Skills = nil
		o.BaseURL, o.APIKey, o.RunID = srv.URL+"/"+echoKey+"/v1", echoKey, id
		o.Stderr = &written
		o.OnEvent = func(line []byte, depth int) { written.Write(line) }
		_, err := Run(context.Background(), o)
		if err != nil {
			written.WriteString(err.Error())
		}
		return err
	}
	for i, st := range statuses {
		mu.Lock()
		mode = i
		mu.Unlock()
		if err := run(fmt.Sprintf("status-%d", st)); err == nil {
			t.Errorf("status %d: the run succeeded", st)
		} else if e := outcome.As(err); e.Exit == outcome.ExitOK {
			t.Errorf("status %d: %v", st, err)
		}
	}
	mu.Lock()
	mode = len(statuses)
	mu.Unlock()
	if err := run("conversation"); err != nil {
		t.Fatalf("conversation: %v", err)
	}
	if bytes.Contains(written.Bytes(), []byte(echoKey)) {
		t.Errorf("the key reached the event stream, stderr or an error:\n%s", written.String())
	}
	filepath.WalkDir(filepath.Join(ws, ".harness"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := os.ReadFile(p)
		if bytes.Contains(b, []byte(echoKey)) {
			t.Errorf("%s holds the key", p)
		}
		return nil
	})
	if !strings.Contains(written.String(), "[redacted]") {
		t.Error("nothing was redacted: the test served the key nowhere harness looked")
	}
}
