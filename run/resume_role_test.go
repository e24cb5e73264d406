package run

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/loop/looptest"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
)

// TestResumeKeepsPromptRole stops a run after one turn and resumes it: the
// write the model asks for after the resume must get the decision it would
// have had without the stop, in every mode and for every role. A resume
// that forgot the role would police the rest of the run as a direct command.
func TestResumeKeepsPromptRole(t *testing.T) {
	replies := []looptest.Reply{
		call1("l1", "list_files", `{}`),
		call1("w1", "write_file", `{"path":"out.txt","content":"x"}`),
		{Content: "done"},
	}
	for _, mode := range []string{"disabled", "observe", "enforce-explicit", "enforce-strict"} {
		for _, role := range []string{"direct-command", "context", "quote"} {
			t.Run(mode+"/"+role, func(t *testing.T) {
				mutate := func(o *Options) {
					o.Skills, o.CFCMode, o.PromptRole, o.AllowTools = nil, mode, role, []string{"write_file"}
					o.Prompt = "write out.txt"
				}
				want := decisionOf(t, runOnce(t, replies, mutate, 0), "w1")

				srv := looptest.New(replies)
				defer srv.Close()
				ws := demoWorkspace(t)
				o := baseOptions(ws)
				o.BaseURL, o.APIKey, o.RunID, o.MaxTurns = srv.URL, "sk-test", "stopped", 1
				mutate(&o)
				res, err := Run(context.Background(), o)
				if outcome.As(err).Exit != outcome.ExitLimit {
					t.Fatalf("first segment: %v, want the turn limit", err)
				}
				if _, err := Resume(context.Background(), ResumeOptions{RunDir: res.RunDir, MaxTurns: "+5", APIKey: "sk-test", Now: fixedClock, Version: "test"}); err != nil {
					t.Fatalf("resume: %v", err)
				}
				if got := decisionOf(t, res.RunDir, "w1"); got != want {
					t.Errorf("after resume the write was %q; without the stop it was %q", got, want)
				}
				_, statErr := os.Stat(filepath.Join(ws, "out.txt"))
				if written := statErr == nil; written != (want != "deny") {
					t.Errorf("out.txt written = %v after a %q decision", written, want)
				}
			})
		}
	}
}

// runOnce runs replies to the end in a fresh workspace and returns the run
// directory.
func runOnce(t *testing.T, replies []looptest.Reply, mutate func(*Options), maxTurns int) string {
	t.Helper()
	srv := looptest.New(replies)
	defer srv.Close()
	o := baseOptions(demoWorkspace(t))
	o.BaseURL, o.APIKey, o.RunID = srv.URL, "sk-test", "once"
	mutate(&o)
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatalf("uninterrupted run: %v", err)
	}
	return res.RunDir
}

func decisionOf(t *testing.T, dir, callID string) string {
	t.Helper()
	var trace record.PolicyTrace
	if err := artifacts.ReadJSON(filepath.Join(dir, record.FilePolicyTrace), "harness.policy-trace", 1, &trace); err != nil {
		t.Fatal(err)
	}
	for _, d := range trace.Decisions {
		if d.CallID == callID {
			return d.Decision.Decision
		}
	}
	t.Fatalf("no decision recorded for %s in %s", callID, dir)
	return ""
}
