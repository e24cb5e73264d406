package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/harness-dev/harness/loop/looptest"
)

// cmdFakeModel starts a loopback OpenAI-compatible server for the rest of
// the script and exports its URL as $MODEL_URL:
//
//	fakemodel replies.json
//
// replies.json is a JSON array of looptest.Reply.
func cmdFakeModel(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: fakemodel replies.json")
	}
	var replies []looptest.Reply
	ts.Check(json.Unmarshal([]byte(ts.ReadFile(args[0])), &replies))
	srv := looptest.New(replies)
	ts.Defer(srv.Close)
	ts.Setenv("MODEL_URL", srv.URL)
	ts.Value(fakeModelKey{}).(*fakeModelSlot).srv = srv
}

// fakeModelKey finds the per-script slot (seeded in Setup) that holds the
// running fake server, so later commands can read its requests.
type fakeModelKey struct{}

type fakeModelSlot struct{ srv *looptest.Server }

// cmdFakeModelRequests writes what the fake server received, one request
// body per line followed by its headers, so scripts can grep it:
//
//	fakemodel-requests requests.txt
func cmdFakeModelRequests(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: fakemodel-requests FILE")
	}
	srv := ts.Value(fakeModelKey{}).(*fakeModelSlot).srv
	if srv == nil {
		ts.Fatalf("fakemodel-requests: no fakemodel started")
	}
	var b strings.Builder
	for _, r := range srv.Requests() {
		b.WriteString("path " + r.Path + "\n")
		b.Write(r.Body)
		b.WriteByte('\n')
		for k, vs := range r.Header {
			b.WriteString("header " + k + ": " + strings.Join(vs, ",") + "\n")
		}
	}
	ts.Check(writeWorkFile(ts, args[0], b.String()))
}

func writeWorkFile(ts *testscript.TestScript, name, content string) error {
	return osWriteFile(ts.MkAbs(name), []byte(content), 0o644)
}

// cmdFakeModelWait blocks until the fake server has received at least N
// requests, so a script can signal a background run while its model request
// is in flight:
//
//	fakemodel-wait 1
func cmdFakeModelWait(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: fakemodel-wait N")
	}
	n, err := strconv.Atoi(args[0])
	ts.Check(err)
	srv := ts.Value(fakeModelKey{}).(*fakeModelSlot).srv
	if srv == nil {
		ts.Fatalf("fakemodel-wait: no fakemodel started")
	}
	// Poll rather than sleep a fixed time: the wait ends as soon as the
	// request arrives, and the deadline only turns a hang into a failure.
	deadline := time.Now().Add(time.Minute)
	for len(srv.Requests()) < n {
		if time.Now().After(deadline) {
			ts.Fatalf("fakemodel-wait: %d requests after a minute, want %d", len(srv.Requests()), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// cmdFakeModelCount checks how many requests the fake server received:
//
//	fakemodel-count 2
func cmdFakeModelCount(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: fakemodel-count N")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	srv := ts.Value(fakeModelKey{}).(*fakeModelSlot).srv
	if srv == nil {
		ts.Fatalf("fakemodel-count: no fakemodel started")
	}
	if got := len(srv.Requests()); got != want {
		ts.Fatalf("the fake model received %d requests, want %d", got, want)
	}
}
