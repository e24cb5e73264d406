// Command peers runs the same three-turn task (read a file, write a file,
// answer) with harness, `codex exec` and `opencode run` against scripted
// endpoints on loopback, in interleaved rounds, and prints per tool the
// wall time, peak RSS (of the largest process of its tree), the time to
// its first model request that offers tools and that request's size,
// with ratios to harness.
//
//	go run ./testdata/bench/peers -rounds 5 -harness bin/harness -codex .tools/peers/node_modules/.bin/codex -opencode .tools/peers/node_modules/.bin/opencode
//
// The endpoint is an agent that never thinks: it reads what tools the
// request offers and, by how many tool results the conversation holds,
// calls the tool that reads notes.md, then the one that writes
// summary.md, then answers. Chat Completions for harness and opencode,
// the Responses API (as a server-sent event stream) for codex, which
// speaks nothing else.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

const summary = "Three notes: alpha, beta, gamma."

func main() {
	rounds := flag.Int("rounds", 5, "interleaved rounds")
	harness := flag.String("harness", "bin/harness", "harness binary")
	codex := flag.String("codex", ".tools/peers/node_modules/.bin/codex", "codex binary")
	opencode := flag.String("opencode", ".tools/peers/node_modules/.bin/opencode", "opencode binary")
	home := flag.String("home", ".tools/peers/home", "HOME, CODEX_HOME and XDG directories for the peers (outside the system temporary directory: codex's sandbox helper refuses one there)")
	flag.Parse()
	srv := newServer()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail(err)
	}
	go http.Serve(ln, srv)
	base := "http://" + ln.Addr().String() + "/v1"
	abs := func(p string) string { a, _ := filepath.Abs(p); return a }
	h := abs(*home)
	tools := []tool{
		{name: "harness", argv: func(ws string) []string {
			return []string{abs(*harness), "run", "--workspace", ws, "--skills-root", ws + "/.agents/skills", "--model", "scripted", "--base-url", base,
				"--allow-tool", "write_file", "--prompt", prompt, "--snapshot-cache", h + "/harness-cache"}
		}},
		{name: "codex", argv: func(ws string) []string {
			return []string{abs(*codex), "exec", "--skip-git-repo-check", "-C", ws, "-m", "scripted", "--sandbox", "workspace-write",
				"-c", "model_provider=peer", "-c", `model_providers.peer={name="peer", base_url="` + base + `", wire_api="responses", env_key="PEER_KEY"}`,
				prompt}
		}},
		{name: "opencode", argv: func(ws string) []string {
			return []string{abs(*opencode), "run", "--model", "peer/scripted", prompt}
		}},
	}
	env := append(os.Environ(), "PEER_KEY=sk-peer", "HARNESS_API_KEY=sk-peer", "HOME="+h, "CODEX_HOME="+h+"/codex",
		"XDG_CONFIG_HOME="+h+"/config", "XDG_DATA_HOME="+h+"/data", "XDG_CACHE_HOME="+h+"/cache", "XDG_STATE_HOME="+h+"/state",
		"OPENCODE_CONFIG_CONTENT="+opencodeConfig(base), "OPENCODE_DISABLE_AUTOUPDATE=true", "OPENCODE_DISABLE_LSP_DOWNLOAD=true")
	for _, d := range []string{h + "/codex", h + "/config", h + "/data", h + "/cache", h + "/state"} {
		os.MkdirAll(d, 0o755)
	}
	results := map[string][]sample{}
	for r := range *rounds + 1 {
		for _, t := range tools {
			s, err := runOnce(srv, t, env)
			if err != nil {
				fmt.Fprintf(os.Stderr, "peers: %s: %v\n", t.name, err)
				os.Exit(1)
			}
			if r > 0 { // the first round warms caches and first-run set-up
				results[t.name] = append(results[t.name], s)
			}
		}
	}
	report(tools, results, *rounds)
}

const prompt = "Read notes.md, write a one-line summary of it to summary.md, then say done."

type tool struct {
	name string
	argv func(ws string) []string
}

type sample struct {
	wall, first time.Duration
	rssKB       int64
	firstBytes  int
}

// runOnce runs one tool in a fresh workspace and checks it did the task.
func runOnce(srv *server, t tool, env []string) (sample, error) {
	ws, err := os.MkdirTemp("", "peers-ws-")
	if err != nil {
		return sample{}, err
	}
	defer os.RemoveAll(ws)
	os.WriteFile(filepath.Join(ws, "notes.md"), []byte("- alpha\n- beta\n- gamma\n"), 0o644)
	os.MkdirAll(filepath.Join(ws, ".agents/skills/summaries"), 0o755)
	os.WriteFile(filepath.Join(ws, ".agents/skills/summaries/SKILL.md"), []byte("---\nname: summaries\ndescription: How to summarise notes. Use when asked for a summary.\n---\nOne line, no markdown.\n"), 0o644)
	srv.reset(ws)
	argv := t.argv(ws)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = ws, append(env, "PWD="+ws)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err = cmd.Run()
	wall := time.Since(start)
	if err != nil {
		return sample{}, fmt.Errorf("%v\n%s", err, tail(out.String()))
	}
	got, _ := os.ReadFile(filepath.Join(ws, "summary.md"))
	if strings.TrimSpace(string(got)) != summary {
		return sample{}, fmt.Errorf("summary.md is %q, not the summary the endpoint asked for\n%s", got, tail(out.String()))
	}
	first, size := srv.first()
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return sample{wall: wall, first: first.Sub(start), rssKB: ru.Maxrss, firstBytes: size}, nil
}

func report(tools []tool, res map[string][]sample, rounds int) {
	med := func(xs []float64) float64 { slices.Sort(xs); return xs[len(xs)/2] }
	type row struct{ wall, first, rss, size float64 }
	rows := map[string]row{}
	for _, t := range tools {
		var w, f, r, s []float64
		for _, x := range res[t.name] {
			w = append(w, x.wall.Seconds()*1000)
			f = append(f, x.first.Seconds()*1000)
			r = append(r, float64(x.rssKB)/1024)
			s = append(s, float64(x.firstBytes))
		}
		rows[t.name] = row{med(w), med(f), med(r), med(s)}
	}
	hr := rows["harness"]
	fmt.Printf("medians of %d interleaved rounds (after one warm-up round)\n\n", rounds)
	fmt.Println("| tool | wall time | peak RSS | to first request | first request | wall / harness | RSS / harness |")
	fmt.Println("| --- | --- | --- | --- | --- | --- | --- |")
	for _, t := range tools {
		x := rows[t.name]
		fmt.Printf("| %s | %.0f ms | %.0f MB | %.0f ms | %.1f KB | %.1f | %.1f |\n", t.name, x.wall, x.rss, x.first, x.size/1024, x.wall/hr.wall, x.rss/hr.rss)
	}
}

func opencodeConfig(base string) string {
	cfg := map[string]any{
		"$schema": "https://opencode.ai/config.json",
		"provider": map[string]any{"peer": map[string]any{
			"npm": "@ai-sdk/openai-compatible", "name": "peer",
			"options": map[string]any{"baseURL": base, "apiKey": "sk-peer"},
			"models":  map[string]any{"scripted": map[string]any{"name": "scripted"}},
		}},
		"permission": map[string]any{"edit": "allow", "bash": "allow"},
		"autoupdate": false, "share": "disabled",
	}
	b, _ := json.Marshal(cfg)
	return string(b)
}

func tail(s string) string {
	if len(s) > 3000 {
		return "..." + s[len(s)-3000:]
	}
	return s
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "peers:", err)
	os.Exit(1)
}

// server is the scripted endpoint: Chat Completions and Responses.
type server struct {
	mu         sync.Mutex
	ws         string
	firstAt    time.Time
	firstBytes int
}

func newServer() *server { return &server{} }

func (s *server) reset(ws string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ws, s.firstAt, s.firstBytes = ws, time.Time{}, 0
}

func (s *server) first() (time.Time, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.firstAt, s.firstBytes
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	// The first request that offers tools: opencode asks for a session
	// title first, in a short request of its own.
	if s.firstAt.IsZero() && r.Method == http.MethodPost && bytes.Contains(body, []byte(`"tools"`)) {
		s.firstAt, s.firstBytes = time.Now(), len(body)
	}
	ws := s.ws
	s.mu.Unlock()
	switch {
	case strings.HasSuffix(r.URL.Path, "/chat/completions"):
		s.chat(w, body, ws)
	case strings.HasSuffix(r.URL.Path, "/responses"):
		s.responses(w, body, ws)
	case strings.HasSuffix(r.URL.Path, "/models"):
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[{"id":"scripted","object":"model","owned_by":"peer"}]}`)
	default:
		http.Error(w, "not scripted: "+r.URL.Path, http.StatusNotFound)
	}
}

// step is what the scripted agent does next: a tool call, or the answer.
type step struct {
	tool, args, text string
}

// next decides the next step from the tools offered and the number of
// tool results so far.
func next(offered []string, results int, ws string) step {
	has := func(n string) bool { return slices.Contains(offered, n) }
	notes, out := filepath.Join(ws, "notes.md"), filepath.Join(ws, "summary.md")
	js := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	switch results {
	case 0:
		switch {
		case has("read_file"):
			return step{tool: "read_file", args: js(map[string]string{"path": "notes.md"})}
		case has("read"):
			return step{tool: "read", args: js(map[string]string{"filePath": notes})}
		case has("exec_command"):
			return step{tool: "exec_command", args: js(map[string]any{"cmd": "cat notes.md"})}
		case has("shell"):
			return step{tool: "shell", args: js(map[string]any{"command": []string{"bash", "-lc", "cat notes.md"}})}
		}
	case 1:
		switch {
		case has("write_file"):
			return step{tool: "write_file", args: js(map[string]string{"path": "summary.md", "content": summary + "\n"})}
		case has("write"):
			return step{tool: "write", args: js(map[string]string{"filePath": out, "content": summary + "\n"})}
		case has("exec_command"):
			return step{tool: "exec_command", args: js(map[string]any{"cmd": "printf '%s\\n' '" + summary + "' > summary.md"})}
		case has("shell"):
			return step{tool: "shell", args: js(map[string]any{"command": []string{"bash", "-lc", "printf '%s\\n' '" + summary + "' > summary.md"}})}
		}
	default:
		return step{text: "done"}
	}
	return step{text: "no tool I know is offered: " + strings.Join(offered, ", ")}
}

func (s *server) chat(w http.ResponseWriter, body []byte, ws string) {
	var req struct {
		Stream   bool `json:"stream"`
		Messages []struct {
			Role string `json:"role"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	json.Unmarshal(body, &req)
	var offered []string
	for _, t := range req.Tools {
		offered = append(offered, t.Function.Name)
	}
	results := 0
	for _, m := range req.Messages {
		if m.Role == "tool" {
			results++
		}
	}
	st := next(offered, results, ws)
	usage := map[string]int{"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
	msg := map[string]any{"role": "assistant", "content": st.text}
	finish := "stop"
	if st.tool != "" {
		msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"id": fmt.Sprintf("call_%d", results), "type": "function", "function": map[string]string{"name": st.tool, "arguments": st.args}}}}
		finish = "tool_calls"
	}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": "c", "object": "chat.completion", "created": 0, "model": "scripted",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	delta := map[string]any{"role": "assistant"}
	if st.tool != "" {
		tc := msg["tool_calls"].([]any)[0].(map[string]any)
		tc["index"] = 0
		delta["tool_calls"] = []any{tc}
	} else {
		delta["content"] = st.text
	}
	chunk := func(choices []any, u any) {
		b, _ := json.Marshal(map[string]any{"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "scripted", "choices": choices, "usage": u})
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	chunk([]any{map[string]any{"index": 0, "delta": delta, "finish_reason": nil}}, nil)
	chunk([]any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": finish}}, nil)
	chunk([]any{}, usage)
	io.WriteString(w, "data: [DONE]\n\n")
}

func (s *server) responses(w http.ResponseWriter, body []byte, ws string) {
	var req struct {
		Input []json.RawMessage `json:"input"`
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	json.Unmarshal(body, &req)
	var offered []string
	for _, t := range req.Tools {
		offered = append(offered, t.Name)
	}
	results := 0
	for _, it := range req.Input {
		var item struct {
			Type string `json:"type"`
		}
		json.Unmarshal(it, &item)
		if item.Type == "function_call_output" || item.Type == "custom_tool_call_output" {
			results++
		}
	}
	st := next(offered, results, ws)
	var item map[string]any
	if st.tool != "" {
		item = map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%d", results), "call_id": fmt.Sprintf("call_%d", results),
			"name": st.tool, "arguments": st.args, "status": "completed"}
	} else {
		item = map[string]any{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": st.text, "annotations": []any{}}}}
	}
	resp := map[string]any{"id": "resp_1", "object": "response", "created_at": 0, "model": "scripted", "status": "in_progress", "output": []any{}}
	w.Header().Set("Content-Type", "text/event-stream")
	event := func(typ string, data map[string]any) {
		data["type"] = typ
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, b)
	}
	event("response.created", map[string]any{"response": resp})
	event("response.output_item.added", map[string]any{"output_index": 0, "item": item})
	if st.tool == "" {
		event("response.output_text.delta", map[string]any{"output_index": 0, "item_id": "msg_1", "content_index": 0, "delta": st.text})
	}
	event("response.output_item.done", map[string]any{"output_index": 0, "item": item})
	resp["status"], resp["output"] = "completed", []any{item}
	resp["usage"] = map[string]any{"input_tokens": 100, "input_tokens_details": map[string]int{"cached_tokens": 0},
		"output_tokens": 10, "output_tokens_details": map[string]int{"reasoning_tokens": 0}, "total_tokens": 110}
	event("response.completed", map[string]any{"response": resp})
}
