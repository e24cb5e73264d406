package loop_test

import (
	"context"
	"strings"
	"testing"

	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/loop/looptest"
)

// TestErrorBodiesOfEveryShape: the server's own message reaches the error,
// whatever the shape of the body it sent.
func TestErrorBodiesOfEveryShape(t *testing.T) {
	for _, tc := range []struct {
		name, body, contentType, want string
	}{
		{"openai object", `{"error":{"message":"model overloaded","type":"server_error"}}`, "application/json", "model overloaded"},
		{"string under error", `{"error": "model not loaded"}`, "application/json", "model not loaded"},
		{"vllm object", `{"object":"error","message":"The model does not exist.","type":"NotFoundError","code":404}`, "application/json", "The model does not exist."},
		{"fastapi detail", `{"detail":"Not authenticated"}`, "application/json", "Not authenticated"},
		{"plain text", "upstream connect error or disconnect/reset before headers", "text/plain", "upstream connect error"},
		{"html from a proxy", "<html><head><title>502 Bad Gateway</title></head><body><h1>502</h1></body></html>", "text/html", "502 Bad Gateway"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := looptest.New([]looptest.Reply{{Status: 400, Body: tc.body, ContentType: tc.contentType}})
			defer srv.Close()
			m := loop.NewOpenAI(loop.OpenAIConfig{BaseURL: srv.URL, APIKey: "k", Retry: loop.RetryPolicy{MaxAttempts: 1}})
			_, err := m.Complete(context.Background(), loop.Request{Model: "m", Messages: []loop.Message{{Role: loop.RoleUser, Content: "x"}}})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "HTTP 400") {
				t.Errorf("error %v, want the server's message %q and the status", err, tc.want)
			}
		})
	}
}

// TestKeylessEndpoint: with no key, no Authorization header is sent.
func TestKeylessEndpoint(t *testing.T) {
	srv := looptest.New([]looptest.Reply{{Content: "hi"}})
	defer srv.Close()
	m := loop.NewOpenAI(loop.OpenAIConfig{BaseURL: srv.URL})
	if _, err := m.Complete(context.Background(), loop.Request{Model: "m", Messages: []loop.Message{{Role: loop.RoleUser, Content: "x"}}}); err != nil {
		t.Fatal(err)
	}
	if h := srv.Requests()[0].Header.Get("Authorization"); h != "" {
		t.Errorf("a keyless request carried Authorization: %q", h)
	}
}
