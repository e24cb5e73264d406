package loop_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/loop/looptest"
)

// echoTool is a small real tool: it returns its "text" argument and
// remembers the calls it served.
type echoTool struct {
	calls []string
	fail  error
}

func (e *echoTool) Spec() loop.ToolSpec {
	return loop.ToolSpec{Name: "echo", Description: "echo text", Parameters: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["text"],"properties":{"text":{"type":"string"}}}`)}
}
func (e *echoTool) Effect() loop.Effect { return loop.EffectRead }
func (e *echoTool) Call(ctx context.Context, c loop.ToolCall, args json.RawMessage) (loop.ToolResult, error) {
	if e.fail != nil {
		return loop.ToolResult{}, e.fail
	}
	var a struct{ Text string }
	json.Unmarshal(args, &a)
	e.calls = append(e.calls, a.Text)
	return loop.ToolResult{Content: "echo: " + a.Text, Status: loop.StatusOK}, nil
}

type harnessT struct {
	dir     string
	journal *artifacts.Journal
}

func newHarness(t *testing.T) *harnessT {
	t.Helper()
	dir := t.TempDir()
	j, err := artifacts.OpenJournal(filepath.Join(dir, "journal.jsonl"), 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return &harnessT{dir: dir, journal: j}
}

func (h *harnessT) events(t *testing.T) []artifacts.Event {
	t.Helper()
	f, err := os.Open(filepath.Join(h.dir, "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := artifacts.ReadJournal(f)
	if err != nil || c.TornTail {
		t.Fatalf("journal: %v torn=%v", err, c.TornTail)
	}
	return c.Events
}

func types(evs []artifacts.Event) string {
	var ts []string
	for _, e := range evs {
		ts = append(ts, e.Type)
	}
	return strings.Join(ts, ",")
}

var fast = loop.RetryPolicy{MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}

func run(t *testing.T, h *harnessT, replies []looptest.Reply, limits loop.Limits, tools ...loop.Tool) (loop.Outcome, *looptest.Server, []loop.Attempt) {
	t.Helper()
	srv := looptest.New(replies)
	t.Cleanup(srv.Close)
	var attempts []loop.Attempt
	model := loop.NewOpenAI(loop.OpenAIConfig{BaseURL: srv.URL, APIKey: "sk-test", Retry: fast, OnAttempt: func(a loop.Attempt) { attempts = append(attempts, a) }})
	out := loop.Run(context.Background(), loop.Config{
		Model: model, ModelName: "m", Tools: tools, Limits: limits,
		Journal: h.journal, ToolOutputDir: filepath.Join(h.dir, "tool-outputs"),
	}, []loop.Message{{Role: loop.RoleSystem, Content: "sys"}, {Role: loop.RoleUser, Content: "task"}})
	return out, srv, attempts
}

func TestPlainAnswer(t *testing.T) {
	h := newHarness(t)
	out, _, _ := run(t, h, []looptest.Reply{{Content: "done", Usage: &looptest.Usage{Prompt: 7, Completion: 3, Cached: 2}}}, loop.Limits{})
	if out.Reason != loop.ReasonCompleted || out.Final.Content != "done" || out.Turns != 1 {
		t.Fatalf("outcome = %+v", out)
	}
	want := loop.Usage{PromptTokens: 7, CompletionTokens: 3, CachedTokens: 2, TotalTokens: 10}
	// Each turn names the model that spent it; a sum names none.
	turn := want
	turn.Model = "m"
	if out.Usage != want || len(out.TurnUsage) != 1 || out.TurnUsage[0] != turn {
		t.Errorf("usage = %+v / %+v", out.Usage, out.TurnUsage)
	}
	if got := types(h.events(t)); got != "model.request,model.response" {
		t.Errorf("events = %s", got)
	}
}

func TestToolCallsRunInOrderAndReachTheModel(t *testing.T) {
	h := newHarness(t)
	echo := &echoTool{}
	out, srv, _ := run(t, h, []looptest.Reply{
		{ToolCalls: []looptest.Call{
			{ID: "c1", Name: "echo", Arguments: `{"text":"one"}`},
			{ID: "c2", Name: "echo", Arguments: `{"text":"two"}`},
		}},
		{Content: "finished"},
	}, loop.Limits{}, echo)
	if out.Reason != loop.ReasonCompleted || strings.Join(echo.calls, ",") != "one,two" {
		t.Fatalf("outcome %s, calls %v", out.Reason, echo.calls)
	}
	if got := types(h.events(t)); got != "model.request,model.response,tool.started,tool.finished,tool.started,tool.finished,model.request,model.response" {
		t.Errorf("events = %s", got)
	}
	reqs := srv.Requests()
	second := string(reqs[1].Body)
	for _, want := range []string{`"tool_call_id":"c1"`, `"tool_call_id":"c2"`, `echo: one`, `"tool_calls"`, `"role":"tool"`} {
		if !strings.Contains(second, want) {
			t.Errorf("second request lacks %s: %s", want, second)
		}
	}
	var rec loop.ToolOutput
	if err := artifacts.ReadJSON(filepath.Join(h.dir, "tool-outputs", "c1-echo.json"), "harness.tool-output", 1, &rec); err != nil || rec.Content != "echo: one" {
		t.Errorf("tool output = %+v, %v", rec, err)
	}
}

func TestBadToolCallsBecomeResults(t *testing.T) {
	for _, tc := range []struct{ name, tool, args, code, mention string }{
		{"malformed JSON", "echo", `{"text":`, "arguments_invalid_json", "not valid JSON"},
		{"unknown tool", "rm_rf", `{}`, "tool_unknown", "available tools: echo"},
		{"missing required", "echo", `{}`, "arguments_invalid", "text"},
		{"wrong type", "echo", `{"text":5}`, "arguments_invalid", "/text"},
		{"extra property", "echo", `{"text":"a","x":1}`, "arguments_invalid", "x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			echo := &echoTool{}
			out, srv, _ := run(t, h, []looptest.Reply{
				{ToolCalls: []looptest.Call{{ID: "c1", Name: tc.tool, Arguments: tc.args}}},
				{Content: "ok"},
			}, loop.Limits{}, echo)
			if out.Reason != loop.ReasonCompleted || len(echo.calls) != 0 {
				t.Fatalf("outcome %s, calls %v", out.Reason, echo.calls)
			}
			var fin loop.ToolFinishedEvent
			for _, e := range h.events(t) {
				if e.Type == "tool.finished" {
					json.Unmarshal(e.Data, &fin)
				}
			}
			if fin.Status != loop.StatusError || fin.Code != tc.code {
				t.Errorf("tool.finished = %+v, want code %s", fin, tc.code)
			}
			body := string(srv.Requests()[1].Body)
			if !strings.Contains(body, tc.code) || !strings.Contains(body, tc.mention) {
				t.Errorf("the model was not told %s/%s: %s", tc.code, tc.mention, body)
			}
		})
	}
}

func TestToolFaultFailsTheRun(t *testing.T) {
	h := newHarness(t)
	out, _, _ := run(t, h, []looptest.Reply{{ToolCalls: []looptest.Call{{ID: "c1", Name: "echo", Arguments: `{"text":"a"}`}}}}, loop.Limits{}, &echoTool{fail: errors.New("disk on fire")})
	if out.Reason != loop.ReasonFailed || !strings.Contains(out.Err.Error(), "disk on fire") {
		t.Fatalf("outcome = %s %v", out.Reason, out.Err)
	}
	if got := types(h.events(t)); !strings.HasSuffix(got, "tool.started,tool.finished") {
		t.Errorf("events = %s", got)
	}
}

func TestRetries(t *testing.T) {
	t.Run("429 then success", func(t *testing.T) {
		out, _, attempts := run(t, newHarness(t), []looptest.Reply{{Status: 429, RetryAfter: "0"}, {Content: "ok"}}, loop.Limits{})
		if out.Reason != loop.ReasonCompleted || len(attempts) != 1 || attempts[0].Status != 429 || attempts[0].GiveUp {
			t.Fatalf("outcome %s, attempts %+v", out.Reason, attempts)
		}
	})
	t.Run("500 until the budget is spent", func(t *testing.T) {
		out, _, attempts := run(t, newHarness(t), []looptest.Reply{{Status: 500}, {Status: 502}, {Status: 503}, {Content: "never"}}, loop.Limits{})
		var pe *loop.ProviderError
		if out.Reason != loop.ReasonProviderError || !errors.As(out.Err, &pe) || pe.Attempts != 3 || !pe.Retryable {
			t.Fatalf("outcome %s %v", out.Reason, out.Err)
		}
		if len(attempts) != 3 || !attempts[2].GiveUp {
			t.Errorf("attempts = %+v", attempts)
		}
	})
	t.Run("401 is not retried", func(t *testing.T) {
		out, srv, _ := run(t, newHarness(t), []looptest.Reply{{Status: 401}, {Content: "never"}}, loop.Limits{})
		if out.Reason != loop.ReasonProviderError || !strings.Contains(out.Err.Error(), "HARNESS_API_KEY") || len(srv.Requests()) != 1 {
			t.Fatalf("outcome %s %v, %d requests", out.Reason, out.Err, len(srv.Requests()))
		}
	})
}

func TestLimits(t *testing.T) {
	loopReply := looptest.Reply{ToolCalls: []looptest.Call{{Name: "echo", Arguments: `{"text":"x"}`}}}
	for _, tc := range []struct {
		name   string
		limits loop.Limits
		reason loop.Reason
		limit  string
	}{
		{"turns", loop.Limits{MaxTurns: 2}, loop.ReasonLimitTurns, "turns"},
		{"tokens", loop.Limits{MaxTokens: 20}, loop.ReasonLimitTokens, "tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			out, _, _ := run(t, h, []looptest.Reply{loopReply, loopReply, loopReply, loopReply}, tc.limits, &echoTool{})
			if out.Reason != tc.reason || out.Turns != 2 {
				t.Fatalf("outcome %s after %d turns", out.Reason, out.Turns)
			}
			evs := h.events(t)
			last := evs[len(evs)-1]
			var d loop.LimitReachedEvent
			json.Unmarshal(last.Data, &d)
			if last.Type != "limit.reached" || d.Limit != tc.limit {
				t.Errorf("last event %s %+v", last.Type, d)
			}
		})
	}
	t.Run("timeout", func(t *testing.T) {
		h := newHarness(t)
		out, _, _ := run(t, h, []looptest.Reply{{Hang: true}}, loop.Limits{Timeout: 50 * time.Millisecond})
		if out.Reason != loop.ReasonLimitTimeout {
			t.Fatalf("outcome %s %v", out.Reason, out.Err)
		}
		if got := types(h.events(t)); got != "model.request,limit.reached" {
			t.Errorf("events = %s", got)
		}
	})
}

func TestInterrupt(t *testing.T) {
	h := newHarness(t)
	srv := looptest.New([]looptest.Reply{{Hang: true}})
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for len(srv.Requests()) == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	out := loop.Run(ctx, loop.Config{Model: loop.NewOpenAI(loop.OpenAIConfig{BaseURL: srv.URL, APIKey: "k", Retry: fast}), ModelName: "m", Journal: h.journal},
		[]loop.Message{{Role: loop.RoleUser, Content: "x"}})
	if out.Reason != loop.ReasonInterrupted {
		t.Fatalf("outcome %s %v", out.Reason, out.Err)
	}
}

// TestFinalAnswerKinds: how the loop ends on each kind of final message.
// TestEnvironmentDoesNotLeak: OPENAI_* variables on a CI runner must not
// change where requests go or what headers they carry.
func TestEnvironmentDoesNotLeak(t *testing.T) {
	t.Setenv("OPENAI_ORG_ID", "org-leak")
	t.Setenv("OPENAI_PROJECT_ID", "proj-leak")
	t.Setenv("OPENAI_CUSTOM_HEADERS", "X-Leak: 1")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	t.Setenv("OPENAI_API_KEY", "sk-env")
	out, srv, _ := run(t, newHarness(t), []looptest.Reply{{Content: "ok"}}, loop.Limits{})
	if out.Reason != loop.ReasonCompleted {
		t.Fatalf("outcome %s %v", out.Reason, out.Err)
	}
	hdr := srv.Requests()[0].Header
	for _, k := range []string{"Openai-Organization", "Openai-Project", "X-Leak"} {
		if v := hdr.Get(k); v != "" {
			t.Errorf("header %s = %q leaked from the environment", k, v)
		}
	}
	if got := hdr.Get("Authorization"); got != "Bearer sk-test" {
		t.Errorf("Authorization = %q", got)
	}
}

// TestConnectionResetIsRetried: a connection that breaks before any
// answer is a transient failure, retried like a 5xx.
func TestConnectionResetIsRetried(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				if tc, ok := conn.(*net.TCPConn); ok {
					tc.SetLinger(0) // close with RST, not FIN
				}
				conn.Close()
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"after reset"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	}))
	defer srv.Close()
	var attempts []loop.Attempt
	m := loop.NewOpenAI(loop.OpenAIConfig{BaseURL: srv.URL + "/v1", APIKey: "k", Retry: fast, OnAttempt: func(a loop.Attempt) { attempts = append(attempts, a) }})
	out := loop.Run(context.Background(), loop.Config{Model: m, ModelName: "m"}, []loop.Message{{Role: loop.RoleUser, Content: "x"}})
	if out.Reason != loop.ReasonCompleted || out.Final.Content != "after reset" || len(attempts) != 1 {
		t.Fatalf("outcome %s %v, attempts %+v", out.Reason, out.Err, attempts)
	}
}

// effectTool records, when it runs, the journal lines already durable
// (the tee sees only those).
type effectTool struct {
	name    string
	effect  loop.Effect
	durable *[]string
	seen    []string
}

func (e *effectTool) Spec() loop.ToolSpec {
	return loop.ToolSpec{Name: e.name, Description: e.name, Parameters: json.RawMessage(`{"type":"object"}`)}
}
func (e *effectTool) Effect() loop.Effect { return e.effect }
func (e *effectTool) Call(ctx context.Context, c loop.ToolCall, args json.RawMessage) (loop.ToolResult, error) {
	e.seen = slices.Clone(*e.durable)
	return loop.ToolResult{Content: "ok", Status: loop.StatusOK}, nil
}

// A call that can change the world starts only once its start (and the
// response that asked for it) is durable; a read does not wait for an
// fsync, and its events become durable with the next model request.
func TestDurableBeforeSideEffects(t *testing.T) {
	h := newHarness(t)
	var durable []string
	h.journal.Tee(func(line []byte) {
		var ev artifacts.Event
		json.Unmarshal(line, &ev)
		durable = append(durable, ev.Type)
	})
	read := &effectTool{name: "look", effect: loop.EffectRead, durable: &durable}
	write := &effectTool{name: "change", effect: loop.EffectSideEffect, durable: &durable}
	out, _, _ := run(t, h, []looptest.Reply{
		{ToolCalls: []looptest.Call{{ID: "c1", Name: "look", Arguments: `{}`}}},
		{ToolCalls: []looptest.Call{{ID: "c2", Name: "change", Arguments: `{}`}}},
		{Content: "finished"},
	}, loop.Limits{}, read, write)
	if out.Reason != loop.ReasonCompleted {
		t.Fatalf("outcome %s: %v", out.Reason, out.Err)
	}
	if got := strings.Join(read.seen, ","); got != "model.request" {
		t.Errorf("durable when the read ran: %s", got)
	}
	want := "model.request,model.response,tool.started,tool.finished,model.request,model.response,tool.started"
	if got := strings.Join(write.seen, ","); got != want {
		t.Errorf("durable when the side effect ran: %s, want %s", got, want)
	}
}

// A small output rides in its tool.finished line, byte for byte, so the
// line's fsync makes it durable; a large one has its own fsynced file and
// stays out of the journal. Either way the file is the one the digest
// names.
func TestToolOutputsInlineUpToTheBound(t *testing.T) {
	h := newHarness(t)
	big := strings.Repeat("x", loop.InlineOutputMax)
	out, _, _ := run(t, h, []looptest.Reply{
		{ToolCalls: []looptest.Call{{ID: "c1", Name: "echo", Arguments: `{"text":"small"}`}, {ID: "c2", Name: "echo", Arguments: `{"text":"` + big + `"}`}}},
		{Content: "done"},
	}, loop.Limits{}, &echoTool{})
	if out.Reason != loop.ReasonCompleted {
		t.Fatalf("outcome %s: %v", out.Reason, out.Err)
	}
	var inline []bool
	for _, ev := range h.events(t) {
		if ev.Type != "tool.finished" {
			continue
		}
		var d loop.ToolFinishedEvent
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(h.dir, filepath.FromSlash(d.Output)))
		if err != nil {
			t.Fatal(err)
		}
		if artifacts.DigestBytes(data) != d.OutputDigest {
			t.Errorf("%s: the file is not the digest's", d.Output)
		}
		if d.OutputBytes != "" && d.OutputBytes != string(data) {
			t.Errorf("%s: the line's bytes are not the file", d.Output)
		}
		inline = append(inline, d.OutputBytes != "")
	}
	if !slices.Equal(inline, []bool{true, false}) {
		t.Errorf("carried in the line: %v, want the small output only", inline)
	}
}

// refTool's schema is whatever a server or a skill declared.
type refTool struct{ schema string }

func (r *refTool) Spec() loop.ToolSpec {
	return loop.ToolSpec{Name: "ref", Description: "a declared tool", Parameters: json.RawMessage(r.schema)}
}
func (r *refTool) Effect() loop.Effect { return loop.EffectRead }
func (r *refTool) Call(ctx context.Context, c loop.ToolCall, args json.RawMessage) (loop.ToolResult, error) {
	return loop.ToolResult{Content: "ran", Status: loop.StatusOK}, nil
}

// A tool's schema that points at a file of the host (an MCP server's
// answer, a skill's declaration) is refused as the tools are added: the
// run fails before asking the model, and harness opened nothing, so a
// FIFO there cannot hold the run and a JSON file there cannot become part
// of what arguments are checked against.
func TestToolSchemaNamesNoHostFile(t *testing.T) {
	host := filepath.Join(t.TempDir(), "host.json")
	if err := os.WriteFile(host, []byte(`{"type":"string","maxLength":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t)
	schema := `{"type":"object","properties":{"a":{"$ref":"file://` + host + `"}}}`
	out, srv, _ := run(t, h, []looptest.Reply{{Content: "never asked"}}, loop.Limits{}, &refTool{schema: schema})
	if out.Reason != loop.ReasonFailed || out.Err == nil || !strings.Contains(out.Err.Error(), "must be self-contained") {
		t.Fatalf("outcome %s: %v", out.Reason, out.Err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("the model was asked %d times", n)
	}
}
