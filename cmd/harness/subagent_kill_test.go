package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harness-dev/harness/loop/looptest"
)

// TestParentKilledWhileChildRuns: SIGKILL the harness while a subagent's
// model call is in flight, then resume the parent: the child continues
// from its own journal and the parent finishes.
func TestParentKilledWhileChildRuns(t *testing.T) {
	srv := looptest.New([]looptest.Reply{
		{ToolCalls: []looptest.Call{{ID: "d1", Name: "delegate_task", Arguments: `{"profile":"helper","task":"Say hi."}`}}},
		{Hang: true},
		{Content: "child resumed"},
		{Content: "parent done"},
	})
	defer srv.Close()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(ws, 0o755)
	profiles := filepath.Join(dir, "profiles.yaml")
	os.WriteFile(profiles, []byte("profiles:\n  - name: helper\n    description: Helps.\n    maxTurns: 3\n"), 0o644)
	bin := harnessBin(t)
	env := append(os.Environ(), "HARNESS_API_KEY=sk-test")
	runs := filepath.Join(dir, "runs")
	cmd := exec.Command(bin, "run", "--workspace", ws, "--model", "m", "--base-url", srv.URL, "--prompt", "delegate",
		"--allow-tool", "delegate_task", "--profiles", profiles, "--run-id", "p", "--artifacts-dir", runs)
	cmd.Env = env
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for len(srv.Requests()) < 2 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the child never asked the model")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	res := exec.Command(bin, "resume", filepath.Join(runs, "p"))
	res.Env = env
	var so, se bytes.Buffer
	res.Stdout, res.Stderr = &so, &se
	if err := res.Run(); err != nil {
		t.Fatalf("resume: %v\n%s", err, se.String())
	}
	if got := strings.TrimSpace(so.String()); got != "parent done" {
		t.Errorf("final answer %q", got)
	}
	var child struct {
		Status   string `json:"status"`
		Segments []any  `json:"segments"`
		Final    struct {
			Content string `json:"content"`
		} `json:"final"`
	}
	b, _ := os.ReadFile(filepath.Join(runs, "p", "children", "d1", "run.json"))
	json.Unmarshal(b, &child)
	if child.Status != "succeeded" || child.Final.Content != "child resumed" {
		t.Errorf("child after resume: %+v", child)
	}
	checkArtifacts(t, filepath.Join(runs, "p"))
}
