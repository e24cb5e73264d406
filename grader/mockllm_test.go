package grader

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/harness-dev/harness/internal/testenv"
	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/record"
)

// TestGradeAgainstMockLLM grades against @dwmkerr/mock-llm, an
// OpenAI-compatible mock server this project did not write, so that the
// grader's request (its response_format included) and its reading of the
// reply are not only checked against our own reading of the API. The mock
// answers by what the request holds: a grading when the run's answer
// reached it, prose otherwise (which no retry mends).
func TestGradeAgainstMockLLM(t *testing.T) {
	mock := testenv.MockLLM(t)

	good := grading(item{twoExpectations[0], true, `The answer says "The capital is Paris."`}, item{twoExpectations[1], false, "No call reads it."})
	completion := func(id, content string) string {
		b, _ := json.Marshal(map[string]any{
			"id": id, "object": "chat.completion", "model": "grader",
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": content}, "finish_reason": "stop"}},
			"usage":   map[string]any{"prompt_tokens": 40, "completion_tokens": 8, "total_tokens": 48},
		})
		return string(b)
	}
	// The last rule that matches wins.
	config := fmt.Sprintf(`rules:
  - path: "/v1/chat/completions"
    method: "POST"
    match: "@"
    response:
      status: 200
      content: |
        %s
  - path: "/v1/chat/completions"
    method: "POST"
    match: "contains(body.messages[1].content, 'The capital is Paris.') && body.response_format.type == 'json_schema'"
    response:
      status: 200
      content: |
        %s
`, completion("chatcmpl-prose", "Both look fine to me."), completion("chatcmpl-grading", good))
	dir := t.TempDir()
	testenv.Must(t, os.WriteFile(filepath.Join(dir, "mock-llm.yaml"), []byte(config), 0o644))
	base := testenv.StartNode(t, "mock-llm", dir, func(port int) ([]string, []string) {
		return []string{mock}, []string{"HOST=127.0.0.1", fmt.Sprintf("PORT=%d", port)}
	})

	g := &Grader{Model: loop.NewOpenAI(loop.OpenAIConfig{BaseURL: base + "/v1", APIKey: "sk-third-party", Retry: fastRetry}), Name: "grader"}
	items, usage, err := g.Grade(context.Background(), baseInput())
	if err != nil {
		t.Fatal(err)
	}
	if got := statuses(items); !reflect.DeepEqual(got, []string{record.GradePassed, record.GradeFailed}) || items[0].Evidence != `The answer says "The capital is Paris."` {
		t.Errorf("items %+v", items)
	}
	if usage.TotalTokens != 48 {
		t.Errorf("usage %+v", usage)
	}

	in := baseInput()
	in.Answer = "Lyon."
	items, usage, err = g.Grade(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		if it.Passed || it.Status != record.GradeUngraded {
			t.Errorf("prose graded: %+v", it)
		}
	}
	if usage.TotalTokens != 3*48 {
		t.Errorf("prose every time: usage %+v, want three requests", usage)
	}
}
