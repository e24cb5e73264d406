package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/internal/testenv"
	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/skills"
)

// statefulModel answers by conversation state (how many assistant turns
// the request already holds), not by arrival order, so a request lost to
// a crash is answered the same way when the resumed run asks again.
func statefulModel(t *testing.T) *httptest.Server {
	turns := []map[string]any{
		toolTurn(call("w1", "write_file", `{"path":"a.txt","content":"one"}`)),
		toolTurn(call("r1", "read_file", `{"path":"a.txt"}`)),
		toolTurn(call("s1", "run_skill_script", `{"skill":"logger","path":"scripts/log.sh"}`)),
		toolTurn(call("w2", "write_file", `{"path":"b.txt","content":"two"}`), call("l1", "list_files", `{}`)),
		{"role": "assistant", "content": "finished"},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				Role string `json:"role"`
			} `json:"messages"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		n := 0
		for _, m := range req.Messages {
			if m.Role == "assistant" {
				n++
			}
		}
		msg := turns[min(n, len(turns)-1)]
		finish := "stop"
		if msg["tool_calls"] != nil {
			finish = "tool_calls"
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"id": "x", "object": "chat.completion", "model": "m",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
		})
	}))
	t.Cleanup(srv.Close)
	return srv
}

func call(id, name, args string) map[string]any {
	return map[string]any{"id": id, "type": "function", "function": map[string]any{"name": name, "arguments": args}}
}

func toolTurn(calls ...map[string]any) map[string]any {
	return map[string]any{"role": "assistant", "content": "", "tool_calls": calls}
}

func harnessBin(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "harness")
	if err := os.Symlink(os.Args[0], bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

// TestCrashAnywhereThenResume kills a real harness process with SIGKILL
// right after each journal event of a run that reads and writes files (the
// process kills itself at that exact event: see crashPoint), resumes it, and checks that the run finishes as the uninterrupted one did, no
// write ran twice, and every artifact still parses.
func TestCrashAnywhereThenResume(t *testing.T) {
	srv := statefulModel(t)
	// Durability across a kill, not concurrency: the plain harness.
	bin := plainHarnessBin(t)
	env := append(os.Environ(), "HARNESS_API_KEY=sk-test")
	sandbox := "bwrap"
	if err := exec.Command("bwrap", "--unshare-all", "--ro-bind", "/", "/", "true").Run(); err != nil {
		if os.Getenv(testenv.RequireVar) != "" {
			t.Fatalf("bwrap is required here but cannot start: %v", err)
		}
		sandbox = "none" // the script is the test's own; only the backend changes
	}
	runArgs := func(ws, runs string) []string {
		return []string{"run", "--json", "--workspace", ws, "--skills-root", filepath.Join(ws, "skills"), "--skill", "logger",
			"--model", "m", "--base-url", srv.URL + "/v1",
			"--allow-tool", "write_file", "--allow-tool", "run_skill_script", "--allow-skill-script", "logger:scripts/log.sh",
			"--sandbox", sandbox, "--prompt", "write and read", "--run-id", "r", "--artifacts-dir", runs}
	}
	newWorkspace := func(ws string) {
		os.MkdirAll(filepath.Join(ws, "skills", "logger", "scripts"), 0o755)
		os.WriteFile(filepath.Join(ws, "skills", "logger", "SKILL.md"), []byte("---\nname: logger\ndescription: Logs. Use to log.\n---\nbody\n"), 0o644)
		os.WriteFile(filepath.Join(ws, "skills", "logger", "scripts", "log.sh"), []byte("#!/bin/bash\necho ran >> log.txt\n"), 0o755)
	}

	// The uninterrupted run, for reference.
	base := t.TempDir()
	ws0, runs0 := filepath.Join(base, "ws"), filepath.Join(base, "runs")
	newWorkspace(ws0)
	cmd := exec.Command(bin, runArgs(ws0, runs0)...)
	cmd.Env = env
	var refErr bytes.Buffer
	cmd.Stderr = &refErr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("reference run: %v\n%s", err, refErr.String())
	}
	if log, _ := os.ReadFile(filepath.Join(ws0, "log.txt")); string(log) != "ran\n" {
		t.Fatalf("reference run: the script did not run once: %q", log)
	}
	events := bytes.Count(out, []byte("\n"))
	want := snapshotDir(t, ws0)

	restored := 0
	for k := 1; k < events; k++ {
		for _, power := range []bool{false, true} {
			name := fmt.Sprintf("after_event_%d", k)
			if power {
				name += "_power_cut"
			}
			t.Run(name, func(t *testing.T) { restored += crashThenResume(t, bin, env, runArgs, newWorkspace, k, power, want) })
		}
	}
	if restored == 0 {
		t.Error("no power cut lost a tool output: the restore path was not tested")
	}
}

// crashThenResume kills a run after its k-th journal event and resumes
// it. With power, the kill stands for a power cut: every tool output the
// loop left to its deferred fsync (one whose tool.finished line carries
// its bytes) is lost as well, removed or left empty.
// It returns how many outputs resume restored.
func crashThenResume(t *testing.T, bin string, env []string, runArgs func(ws, runs string) []string, newWorkspace func(string), k int, power bool, want string) int {
	dir := t.TempDir()
	ws, runs := filepath.Join(dir, "ws"), filepath.Join(dir, "runs")
	newWorkspace(ws)
	cmd := exec.Command(bin, runArgs(ws, runs)...)
	cmd.Env = append(env, fmt.Sprintf("HARNESS_TEST_CRASH_AFTER=seq:%d", k))
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the run was not killed after event %d: %v", k, err)
	}

	runDir := filepath.Join(runs, "r")
	lost := 0
	if power {
		lost = losePendingOutputs(t, runDir, k%2 == 0)
	}
	res := exec.Command(bin, "resume", runDir)
	res.Env = env
	var so, se bytes.Buffer
	res.Stdout, res.Stderr = &so, &se
	if err := res.Run(); err != nil {
		t.Fatalf("resume after event %d: %v\n%s", k, err, se.String())
	}
	if got := strings.TrimSpace(so.String()); got != "finished" {
		t.Errorf("final answer %q", got)
	}
	journal, _ := os.ReadFile(filepath.Join(runDir, "journal.jsonl"))
	okWrites := map[string]int{}
	interrupted := false
	for _, line := range bytes.Split(bytes.TrimSpace(journal), []byte("\n")) {
		var ev struct {
			Type string `json:"type"`
			Data struct {
				CallID string `json:"callId"`
				Tool   string `json:"tool"`
				Status string `json:"status"`
			} `json:"data"`
		}
		if err := json.Unmarshal(line, &ev); err != nil {
			t.Fatalf("journal line does not parse: %s", line)
		}
		if ev.Type == "tool.finished" && (ev.Data.Tool == "write_file" || ev.Data.Tool == "run_skill_script") {
			if ev.Data.Status == "ok" {
				okWrites[ev.Data.CallID]++
			}
			interrupted = interrupted || ev.Data.Status == "interrupted"
		}
	}
	for id, n := range okWrites {
		if n > 1 {
			t.Errorf("side effect %s ran %d times", id, n)
		}
	}
	if got := bytes.Count(journal, []byte(`"type":"tool.output.restored"`)); got != lost {
		t.Errorf("%d tool.output.restored events, want %d (the outputs lost)", got, lost)
	}
	if log, _ := os.ReadFile(filepath.Join(ws, "log.txt")); bytes.Count(log, []byte("ran")) > 1 {
		t.Errorf("the script ran %d times", bytes.Count(log, []byte("ran")))
	}
	if got := snapshotDir(t, ws); !interrupted && got != want {
		t.Errorf("workspace %q, want %q", got, want)
	}
	checkArtifacts(t, runDir)
	ver := exec.Command(bin, "verify", runDir)
	ver.Env = env
	if out, err := ver.CombinedOutput(); err != nil {
		t.Errorf("verify after the resume: %v\n%s", err, out)
	}
	return lost
}

// losePendingOutputs removes (or, with empty, truncates) every tool output
// that can still be waiting for its fsync: its tool.finished line carries
// its bytes and no run.finished follows it (the loop syncs its outputs
// before the segment ends). It returns how many.
func losePendingOutputs(t *testing.T, runDir string, empty bool) int {
	t.Helper()
	journal, err := os.ReadFile(filepath.Join(runDir, "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var pending []string
	for _, line := range bytes.Split(bytes.TrimSpace(journal), []byte("\n")) {
		var ev struct {
			Type string              `json:"type"`
			Data record.ToolFinished `json:"data"`
		}
		if json.Unmarshal(line, &ev) != nil {
			continue
		}
		switch {
		case ev.Type == "run.finished":
			pending = nil
		case ev.Type == "tool.finished" && ev.Data.OutputBytes != "":
			pending = append(pending, ev.Data.Output)
		}
	}
	for _, out := range pending {
		p := filepath.Join(runDir, filepath.FromSlash(out))
		if empty {
			err = os.Truncate(p, 0)
		} else {
			err = os.Remove(p)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return len(pending)
}

func snapshotDir(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		c, _ := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(&b, "%s=%s;", rel, c)
		return nil
	})
	return b.String()
}

// checkArtifacts: every JSON file in the run directory is a complete
// artifact that decodes into its Go type (the type is the schema).
func checkArtifacts(t *testing.T, dir string) {
	t.Helper()
	typed := map[string]struct {
		typ string
		v   any
	}{
		"run.json":                     {"harness.run", &record.Manifest{}},
		"skill-registry.json":          {skills.RegistryType, &skills.Registry{}},
		"skill-activations.json":       {"harness.skill-activations", &record.Activations{}},
		"skill-resource-reads.json":    {"harness.skill-resource-reads", &record.ResourceReads{}},
		"skill-script-executions.json": {"harness.skill-script-executions", &record.ScriptExecutions{}},
		"drift-report.json":            {"harness.drift-report", &record.DriftReport{}},
		"policy-snapshot.json":         {"harness.policy-snapshot", &record.PolicySnapshot{}},
		"policy-trace.json":            {"harness.policy-trace", &record.PolicyTrace{}},
		"result.json":                  {record.TypeResult, &record.Result{}},
		record.FileSkillForge:          {record.TypeSkillForge, &record.SkillForge{}},
		record.FileMCPServers:          {record.TypeMCPServers, &record.MCPServers{}},
		record.FileCommandExecutions:   {record.TypeCommandExecutions, &record.CommandExecutions{}},
	}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".json") {
			return err
		}
		want, ok := typed[filepath.Base(p)]
		if filepath.Base(filepath.Dir(p)) == "tool-outputs" {
			want, ok = struct {
				typ string
				v   any
			}{"harness.tool-output", &loop.ToolOutput{}}, true
		}
		if !ok {
			t.Errorf("unexpected JSON file %s", p)
			return nil
		}
		if err := artifacts.ReadJSON(p, want.typ, 1, want.v); err != nil {
			t.Errorf("%s: %v", p, err)
		}
		return nil
	})
}
