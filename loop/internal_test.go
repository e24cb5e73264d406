package loop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/harness-dev/harness/loop/wire"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"3", 3 * time.Second, true},
		{"0", 0, true},
		{now.Add(10 * time.Second).Format(http.TimeFormat), 10 * time.Second, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
		{"soon", 0, false},
		{"", 0, false},
		{"-1", 0, false},
	} {
		got, ok := retryAfter(tc.in, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("retryAfter(%q) = %v %v, want %v %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name      string
		err       error
		transient bool
	}{
		{"429", &wire.APIError{StatusCode: 429}, true},
		{"500", &wire.APIError{StatusCode: 500}, true},
		{"400", &wire.APIError{StatusCode: 400}, false},
		{"401", &wire.APIError{StatusCode: 401}, false},
		{"reset", syscall.ECONNRESET, true},
		{"EOF", io.ErrUnexpectedEOF, true},
		{"other", io.ErrShortWrite, false},
	} {
		if _, got := classify(tc.err); got != tc.transient {
			t.Errorf("%s: transient = %v", tc.name, got)
		}
	}
}

func TestFileSafe(t *testing.T) {
	for in, want := range map[string]string{
		"call_1":                "call_1",
		"../../etc/passwd":      "______etc_passwd",
		"":                      "call",
		strings.Repeat("a", 99): strings.Repeat("a", 64),
	} {
		if got := FileSafe(in); got != want {
			t.Errorf("FileSafe(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRetryDelayIsBounded(t *testing.T) {
	p := RetryPolicy{BaseDelay: time.Second, MaxDelay: 5 * time.Second}.withDefaults()
	for n := 1; n < 70; n++ {
		if d := p.delay(n, io.EOF); d <= 0 || d > p.MaxDelay {
			t.Fatalf("delay(%d) = %v", n, d)
		}
	}
}

// TestStableCallIDs: a call without an id, with one already used (in
// the same answer or earlier), or with one that is not plain, gets one
// from its turn and position; a replaced id that can go back to the model
// is kept as ModelID.
func TestStableCallIDs(t *testing.T) {
	hostile := "w1\r\x1b[2K\x1b[8m"
	history := []Message{{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "used"}, {ID: "call_t1_1", ModelID: "a b"}}}}
	for _, tc := range []struct {
		name      string
		calls     []ToolCall
		ids, wire []string
	}{
		{"plain and repeated", []ToolCall{{ID: ""}, {ID: "used"}, {ID: "x"}, {ID: "x"}, {ID: "fine"}},
			[]string{"call_t3_1", "call_t3_2", "x", "call_t3_4", "fine"}, []string{"", "", "", "", ""}},
		{"control sequences", []ToolCall{{ID: hostile}, {ID: "ok"}},
			[]string{"call_t3_1", "ok"}, []string{hostile, ""}},
		{"shell and spaces", []ToolCall{{ID: "$(rm -rf ~)"}, {ID: "a b"}, {ID: strings.Repeat("x", 65)}},
			[]string{"call_t3_1", "call_t3_2", "call_t3_3"}, []string{"$(rm -rf ~)", "", strings.Repeat("x", 65)}},
		{"the same hostile id twice", []ToolCall{{ID: hostile}, {ID: hostile}},
			[]string{"call_t3_1", "call_t3_2"}, []string{hostile, ""}},
		{"a model id that is a minted one", []ToolCall{{ID: "call_t3_2"}, {ID: ""}},
			[]string{"call_t3_2", "call_t3_2_2"}, []string{"", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := stableCallIDs(3, tc.calls, history)
			for i, c := range got {
				if c.ID != tc.ids[i] || c.ModelID != tc.wire[i] {
					t.Errorf("call %d: id %q model id %q, want %q and %q", i, c.ID, c.ModelID, tc.ids[i], tc.wire[i])
				}
			}
		})
	}
}

// TestReplacedCallIDsGoBackAsTheModelGaveThem: the model matches results
// to its calls by its own ids, over either wire API.
func TestReplacedCallIDsGoBackAsTheModelGaveThem(t *testing.T) {
	hostile := "w1\r\x1b[2K"
	req := Request{Model: "m", Messages: []Message{
		{Role: RoleUser, Content: "go"},
		{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "call_t1_1", ModelID: hostile, Name: "read_file", Arguments: "{}"}}},
		{Role: RoleTool, ToolCallID: "call_t1_1", Content: "x"},
	}}
	chat, err := toParams(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(chat)
	if n := strings.Count(string(b), `"w1\r\u001b[2K"`); n != 2 || strings.Contains(string(b), "call_t1_1") {
		t.Errorf("chat request sends the model's id %d times (want 2, and never harness's): %s", n, b)
	}
	resp, err := toResponseParams(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = resp.Body(nil)
	if n := strings.Count(string(b), `"w1\r\u001b[2K"`); n != 2 || strings.Contains(string(b), "call_t1_1") {
		t.Errorf("responses request sends the model's id %d times (want 2, and never harness's): %s", n, b)
	}
}

// TestEstimateUsage: no usage from the provider is counted, not zero.
func TestEstimateUsage(t *testing.T) {
	u := estimateUsage(Request{Messages: []Message{{Role: RoleUser, Content: strings.Repeat("x", 400)}}}, Message{Content: strings.Repeat("y", 40)})
	if !u.Estimated || u.PromptTokens != 100 || u.CompletionTokens != 10 || u.TotalTokens != 110 {
		t.Errorf("estimate %+v", u)
	}
}

// A recorded schema is re-encoded ("->" becomes "-\u003e"); the mismatch
// report must not blame a schema that is equal by value.
func TestFirstDifferenceComparesSchemasByValue(t *testing.T) {
	tool := func(params string) Request {
		return Request{Model: "m", Tools: []ToolSpec{{Name: "t", Description: "d", Parameters: json.RawMessage(params)}},
			Messages: []Message{{Role: "user", Content: "a"}}}
	}
	want := tool(`{"type":"object","description":"path -\u003e content"}`)
	got := tool(`{"description": "path -> content", "type": "object"}`)
	got.Messages[0].Content = "b"
	if d := firstDifference(want, got); d != "messages[0].content differs" {
		t.Errorf("firstDifference = %q", d)
	}
	if d := firstDifference(want, tool(`{"type":"string"}`)); d != "tools[0].parameters differs" {
		t.Errorf("a real schema change: %q", d)
	}
}

// TestEndlessResponseBody: an endpoint whose answer never ends fails the
// attempt at the bound, streamed or not, and is not asked again.
func TestEndlessResponseBody(t *testing.T) {
	for _, stream := range []bool{false, true} {
		var requests atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			requests.Add(1)
			if stream {
				w.Header().Set("Content-Type", "text/event-stream")
			} else {
				w.Header().Set("Content-Type", "application/json")
			}
			chunk := []byte(strings.Repeat(" ", 4096))
			for r.Context().Err() == nil {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}))
		m := NewOpenAI(OpenAIConfig{BaseURL: srv.URL, APIKey: "k", Stream: stream, Retry: RetryPolicy{MaxAttempts: 3, BaseDelay: time.Millisecond}, maxBody: 1 << 20})
		_, err := m.Complete(context.Background(), Request{Model: "m", Messages: []Message{{Role: RoleUser, Content: "x"}}})
		srv.Close()
		var pe *ProviderError
		if !errors.As(err, &pe) || pe.Code != codeResponseTooLarge || pe.Retryable ||
			!strings.Contains(err.Error(), "model provider sent too much: the response body is larger than 1 MiB") {
			t.Errorf("stream=%v: err = %v, want a ProviderError for a body over 1 MiB", stream, err)
		}
		if n := requests.Load(); n != 1 {
			t.Errorf("stream=%v: %d requests, want 1 (not retried)", stream, n)
		}
	}
}

// TestBoundedBodyAtTheBound: a body of exactly the bound is read whole.
func TestBoundedBodyAtTheBound(t *testing.T) {
	b := &boundedBody{ReadCloser: io.NopCloser(strings.NewReader("12345678")), left: 8}
	got, err := io.ReadAll(b)
	if err != nil || string(got) != "12345678" {
		t.Errorf("ReadAll = %q, %v", got, err)
	}
	b = &boundedBody{ReadCloser: io.NopCloser(strings.NewReader("123456789")), left: 8, max: 8}
	var tl *ResponseTooLargeError
	if _, err := io.ReadAll(b); !errors.As(err, &tl) {
		t.Errorf("one byte over: %v", err)
	}
}

// TestDelayHonoursTheServer: the wait before a retry is what the server
// asked for (retry-after-ms first, then Retry-After), capped by MaxDelay,
// and the exponential backoff otherwise.
func TestDelayHonoursTheServer(t *testing.T) {
	p := RetryPolicy{MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: time.Minute}
	withHeader := func(k, v string) error {
		return &wire.APIError{StatusCode: 429, Header: http.Header{http.CanonicalHeaderKey(k): {v}}}
	}
	for _, tc := range []struct {
		name string
		err  error
		want time.Duration
	}{
		{"retry-after-ms", withHeader("retry-after-ms", "1234"), 1234 * time.Millisecond},
		{"Retry-After seconds", withHeader("Retry-After", "7"), 7 * time.Second},
		{"capped by MaxDelay", withHeader("Retry-After", "3600"), time.Minute},
	} {
		if got := p.delay(1, tc.err); got != tc.want {
			t.Errorf("%s: delay %v, want %v", tc.name, got, tc.want)
		}
	}
	// Without a header: the backoff, 1 ms with up to a quarter of jitter.
	if got := p.delay(1, errors.New("x")); got < 750*time.Microsecond || got > 1250*time.Microsecond {
		t.Errorf("no header: delay %v, want about 1ms", got)
	}
}

// A 404 names the endpoint and the model, in every attempt line and in the
// error, and never the credentials a base URL may carry.
func TestNotFoundNamesEndpointWithoutCredentials(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"error": {"message": "no such model"}}`))
	}))
	defer srv.Close()
	base := strings.Replace(srv.URL, "http://", "http://user:s3cret@", 1) + "/v1"
	var lines []string
	m := NewOpenAI(OpenAIConfig{BaseURL: base, APIKey: "k", Retry: RetryPolicy{MaxAttempts: 1, BaseDelay: time.Millisecond},
		OnAttempt: func(a Attempt) { lines = append(lines, a.Error) }})
	_, err := m.Complete(context.Background(), Request{Model: "gpt-nope", Messages: []Message{{Role: RoleUser, Content: "x"}}})
	want := fmt.Sprintf("the endpoint %s/v1 does not serve model \"gpt-nope\"", srv.URL)
	for _, s := range append(lines, fmt.Sprint(err)) {
		if !strings.Contains(s, want) || strings.Contains(s, "s3cret") {
			t.Errorf("%q: want %q and no credentials", s, want)
		}
	}
	if len(lines) != 1 {
		t.Errorf("%d attempt lines, want 1", len(lines))
	}
}
