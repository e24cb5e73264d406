package loop_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/loop/looptest"
)

func baseRequest() loop.Request {
	temp := 0.2
	return loop.Request{
		Model: "m",
		Messages: []loop.Message{
			{Role: loop.RoleSystem, Content: "sys"},
			{Role: loop.RoleUser, Content: "task"},
			{Role: loop.RoleAssistant, ToolCalls: []loop.ToolCall{{ID: "c1", Name: "echo", Arguments: `{"text":"a"}`}}},
			{Role: loop.RoleTool, Content: "echo: a", ToolCallID: "c1"},
		},
		Tools:  []loop.ToolSpec{(&echoTool{}).Spec()},
		Params: loop.Params{Temperature: &temp},
	}
}

func TestRequestKey(t *testing.T) {
	a := baseRequest()
	b := baseRequest()
	b.Tools[0].Parameters = json.RawMessage(strings.ReplaceAll(string(b.Tools[0].Parameters), ",", ", "))
	ka, _ := loop.RequestKey(a)
	kb, _ := loop.RequestKey(b)
	if ka != kb {
		t.Error("JSON spacing in a tool schema changed the key")
	}
	b.Messages[1].Content = "other"
	kb, _ = loop.RequestKey(b)
	if ka == kb {
		t.Error("different content, same key")
	}
}

func TestCassetteMismatchNamesTheField(t *testing.T) {
	temp := 0.9
	for _, tc := range []struct {
		name   string
		change func(r *loop.Request)
		field  string
	}{
		{"model", func(r *loop.Request) { r.Model = "n" }, "model differs"},
		{"content", func(r *loop.Request) { r.Messages[1].Content = "x" }, "messages[1].content differs"},
		{"tool call arguments", func(r *loop.Request) { r.Messages[2].ToolCalls[0].Arguments = "{}" }, "messages[2].toolCalls[0].arguments differs"},
		{"tool parameters", func(r *loop.Request) { r.Tools[0].Parameters = json.RawMessage(`{}`) }, "tools[0].parameters differs"},
		{"temperature", func(r *loop.Request) { r.Params.Temperature = &temp }, "params.temperature differs"},
		{"extra message", func(r *loop.Request) {
			r.Messages = append(r.Messages, loop.Message{Role: loop.RoleUser, Content: "more"})
		}, "messages (recorded 4, got 5)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.jsonl")
			writeCassette(t, path, baseRequest())
			c, err := loop.OpenCassette(path)
			if err != nil {
				t.Fatal(err)
			}
			req := baseRequest()
			tc.change(&req)
			_, err = c.Complete(context.Background(), req)
			var mm *loop.CassetteMismatchError
			if !errors.As(err, &mm) || mm.Field != tc.field {
				t.Fatalf("err = %v, want field %q", err, tc.field)
			}
			if !strings.Contains(err.Error(), "request 1") {
				t.Errorf("message does not name the request: %v", err)
			}
		})
	}
}

// writeCassette records one exchange for req through a real Recorder.
func writeCassette(t *testing.T, path string, req loop.Request) {
	t.Helper()
	srv := looptest.New([]looptest.Reply{{Content: "recorded"}})
	defer srv.Close()
	rec, err := loop.NewRecorder(loop.NewOpenAI(loop.OpenAIConfig{BaseURL: srv.URL, APIKey: "k", Retry: fast}), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rec.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	rec.Close()
}

func TestCassetteReplayAndLimits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.jsonl")
	writeCassette(t, path, baseRequest())
	c, err := loop.OpenCassette(path)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Complete(context.Background(), baseRequest())
	if err != nil || resp.Message.Content != "recorded" {
		t.Fatalf("replay = %+v, %v", resp, err)
	}
	_, err = c.Complete(context.Background(), baseRequest())
	var mm *loop.CassetteMismatchError
	if !errors.As(err, &mm) || mm.Field != "" || !strings.Contains(err.Error(), "holds 1 exchanges") {
		t.Errorf("second identical request: %v", err)
	}
	if _, err := loop.NewRecorder(nil, path, nil); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("NewRecorder over a recording: %v", err)
	}
	data, _ := os.ReadFile(path)
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	os.WriteFile(bad, append(data, []byte("{not json\n")...), 0o644)
	if _, err := loop.OpenCassette(bad); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("malformed cassette: %v", err)
	}
	// A stream without newlines is refused at the line bound, not read
	// until memory runs out.
	if _, err := loop.OpenCassette("/dev/zero"); err == nil || !strings.Contains(err.Error(), "cassette line 1 is longer than 64 MiB") {
		t.Errorf("endless line: %v", err)
	}
}

// TestRecordThenReplayRun: a whole loop recorded against the server and
// replayed offline gives the same outcome.
func TestRecordThenReplayRun(t *testing.T) {
	replies := []looptest.Reply{
		{ToolCalls: []looptest.Call{{ID: "c1", Name: "echo", Arguments: `{"text":"a"}`}}},
		{Content: "done"},
	}
	srv := looptest.New(replies)
	path := filepath.Join(t.TempDir(), "c.jsonl")
	rec, err := loop.NewRecorder(loop.NewOpenAI(loop.OpenAIConfig{BaseURL: srv.URL, APIKey: "k", Retry: fast}), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	history := []loop.Message{{Role: loop.RoleUser, Content: "go"}}
	first := loop.Run(context.Background(), loop.Config{Model: rec, ModelName: "m", Tools: []loop.Tool{&echoTool{}}}, history)
	rec.Close()
	srv.Close()
	c, err := loop.OpenCassette(path)
	if err != nil {
		t.Fatal(err)
	}
	second := loop.Run(context.Background(), loop.Config{Model: c, ModelName: "m", Tools: []loop.Tool{&echoTool{}}}, history)
	if first.Reason != loop.ReasonCompleted || second.Reason != first.Reason || second.Final.Content != first.Final.Content || second.Usage != first.Usage {
		t.Fatalf("record %+v\nreplay %+v", first, second)
	}
}

// A recorded request is read again from the file to explain a mismatch:
// its place must survive blank lines, indentation, CRLF line ends and a
// line longer than the read buffer, and a line whose request cannot be cut
// out (an escaped key) keeps its own copy.
func TestCassetteMismatchFindsTheRecordedRequest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.jsonl")
	writeCassette(t, path, baseRequest())
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	line := strings.TrimSpace(string(data))
	long := baseRequest()
	long.Messages[1].Content = strings.Repeat("long ", 100_000)
	key, _ := loop.RequestKey(long)
	var entry map[string]json.RawMessage
	if err := json.Unmarshal([]byte(line), &entry); err != nil {
		t.Fatal(err)
	}
	entry["key"], _ = json.Marshal(key)
	entry["request"], _ = json.Marshal(long)
	longLine, _ := json.Marshal(entry)
	escaped := strings.Replace(line, `"request"`, `"requ\u0065st"`, 1)
	content := "\n  " + line + "\r\n\n" + string(longLine) + "\n\t" + escaped + "\r\n"
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := loop.OpenCassette(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Complete(context.Background(), baseRequest()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"messages[1].content differs", "messages[1].content differs"} {
		req := baseRequest()
		req.Messages[1].Content = "changed"
		_, err = c.Complete(context.Background(), req)
		var mm *loop.CassetteMismatchError
		if !errors.As(err, &mm) || mm.Field != want {
			t.Fatalf("err = %v, want field %q", err, want)
		}
	}
}
