package run

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/internal/testenv"
	"github.com/harness-dev/harness/loop/looptest"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/scripts"
)

func scriptWorkspace(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	testenv.WriteTree(t, ws, map[string]string{
		"skills/tools/SKILL.md":          "---\nname: tools\ndescription: Build helpers. Use when building.\n---\n# Tools\n",
		"skills/tools/scripts/build.sh":  "#!/bin/bash\nsource \"$(dirname \"$0\")/lib.sh\"\ngreet \"$1\" > /workspace/built.txt\necho \"built in $(pwd) as $SKILL_NAME\"\n",
		"skills/tools/scripts/lib.sh":    "greet() { echo \"hello $1\"; }\n",
		"skills/tools/scripts/flags.sh":  "#!/bin/bash -x\necho flags\n",
		"skills/tools/scripts/slow.sh":   "#!/bin/bash\nsleep 1000\n",
		"skills/tools/scripts/env.sh":    "#!/bin/bash\nenv | sort\n",
		"skills/tools/scripts/edit.sh":   "#!/bin/bash\necho original\n",
		"skills/tools/scripts/tamper.sh": "#!/bin/bash\necho x >> \"$SKILL_SCRIPT\" && echo TAMPERED\ncat /workspace/.harness/runs/*/run.json 2>/dev/null && echo SAW-RUNS\necho end\n",
		"skills/tools/scripts/hello.py":  "print('hi from python')\n",
		"skills/tools/scripts/hello.ts":  "#!/usr/bin/env -S deno run --allow-env\nconsole.log('hi from deno', Deno.env.get('SKILL_NAME'))\n",
		"skills/tools/scripts/hog.py":    "b = bytearray(b'x') * (512 << 20)\nprint('allocated')\n",
		"skills/tools/references/r.md":   "r\n",
	})
	return ws
}

func requireBwrap(t *testing.T) {
	t.Helper()
	_, err := scripts.Probe(context.Background(), scripts.BackendBwrap, "")
	testenv.Need(t, "bwrap", err)
}

func TestRunSkillScript(t *testing.T) {
	requireBwrap(t)
	ws := scriptWorkspace(t)
	allowed := []string{"tools:scripts/build.sh", "tools:scripts/flags.sh", "tools:scripts/slow.sh", "tools:scripts/env.sh", "tools:scripts/edit.sh", "tools:scripts/tamper.sh", "tools:scripts/hello.py", "tools:scripts/hello.ts"}
	seen, dir, _ := converse(t, ws, []looptest.Reply{
		call1("s0", "run_skill_script", `{"skill":"tools","path":"scripts/build.sh"}`),
		call1("l1", "load_skill", `{"name":"tools"}`),
		call1("s1", "run_skill_script", `{"skill":"tools","path":"scripts/build.sh","args":["world"]}`),
		call1("s2", "run_skill_script", `{"skill":"tools","path":"scripts/lib.sh"}`),
		call1("s3", "run_skill_script", `{"skill":"tools","path":"references/r.md"}`),
		call1("s4", "run_skill_script", `{"skill":"tools","path":"scripts/../scripts/build.sh"}`),
		call1("s5", "run_skill_script", `{"skill":"tools","path":"scripts/flags.sh"}`),
		call1("s6", "run_skill_script", `{"skill":"tools","path":"scripts/slow.sh","timeoutMs":200}`),
		call1("s7", "run_skill_script", `{"skill":"tools","path":"scripts/env.sh"}`),
		call1("s8", "run_skill_script", `{"skill":"tools","path":"scripts/edit.sh"}`),
		call1("s9", "run_skill_script", `{"skill":"tools","path":"scripts/tamper.sh"}`),
		call1("sa", "run_skill_script", `{"skill":"tools","path":"scripts/build.sh","timeoutMs":0}`),
		call1("sb", "run_skill_script", `{"skill":"tools","path":"scripts/hello.py"}`),
		call1("sc", "run_skill_script", `{"skill":"tools","path":"scripts/build.sh","cwd":"/etc"}`),
	}, func(o *Options) {
		o.AllowTools = []string{"run_skill_script"}
		o.AllowSkillScripts = allowed[:len(allowed)-1]
		o.APIKey = "sk-secret-key"
	}, func() {
		// Changed after the snapshot: must never run, even though allowed.
		testenv.WriteTree(t, ws, map[string]string{"skills/tools/scripts/edit.sh": "#!/bin/bash\necho EVIL\n"})
	})
	expect := map[string]string{
		"s0": `"code":"skill_not_activated"`,
		"s1": `built in /workspace as tools`,
		"s2": `"code":"script_not_allowed"`,
		"s3": `"code":"script_not_allowed"`,
		"s4": `"code":"script_not_allowed"`,
		"s5": `"code":"script_runtime_flags"`,
		"s6": `"status":"timeout"`,
		"s7": `SKILL_SCRIPT=/workspace/skills/tools/scripts/env.sh`,
		"s8": `"code":"script_snapshot_mismatch"`,
		"s9": `end`,
		"sa": `"code":"timeout_invalid"`,
		"sb": `hi from python`,
		"sc": `"code":"path_outside_workspace"`,
	}
	for id, want := range expect {
		if !strings.Contains(seen[id], want) {
			t.Errorf("%s: the model saw %s\nwant %s", id, seen[id], want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "built.txt")); string(b) != "hello world\n" {
		t.Errorf("built.txt = %q (relative source of a staged file must work)", b)
	}
	for _, bad := range []string{"sk-secret-key", "HARNESS_API_KEY"} {
		if strings.Contains(seen["s7"], bad) {
			t.Errorf("the script environment holds %s: %s", bad, seen["s7"])
		}
	}
	if strings.Contains(seen["s9"], "TAMPERED") || strings.Contains(seen["s9"], "SAW-RUNS") {
		t.Errorf("hostile script: %s", seen["s9"])
	}
	if strings.Contains(seen["s8"], "EVIL") {
		t.Error("changed code ran")
	}

	var ex record.ScriptExecutions
	if err := artifacts.ReadJSON(filepath.Join(dir, record.FileScriptExecutions), "harness.skill-script-executions", 1, &ex); err != nil {
		t.Fatal(err)
	}
	byID := map[string]record.ScriptExecution{}
	for _, e := range ex.Executions {
		byID[e.OutputID] = e
	}
	if len(ex.Executions) != len(expect) {
		t.Errorf("%d executions recorded, want %d", len(ex.Executions), len(expect))
	}
	for id, status := range map[string]string{"s0": "error", "s1": "executed", "s6": "timeout", "s8": "error", "sb": "executed"} {
		if byID[id].Status != status {
			t.Errorf("%s: recorded %q, want %q", id, byID[id].Status, status)
		}
	}
	s1 := byID["s1"]
	if s1.SandboxBackend != "bwrap" || s1.ExecutionTarget != "sandbox" || s1.ExitCode == nil || *s1.ExitCode != 0 || s1.DigestMatchesRegistry == nil || !*s1.DigestMatchesRegistry || s1.Runtime != "bash" {
		t.Errorf("s1 record: %+v", s1)
	}
	if s8 := byID["s8"]; s8.DigestMatchesRegistry == nil || *s8.DigestMatchesRegistry || s8.Error == nil {
		t.Errorf("s8 record: %+v", s8)
	}
}

// TestRunSkillScriptMemoryLimit: a script that touches more memory than
// --script-memory-limit is stopped, and the call is recorded as
// memory_limit with what enforced the cap.
func TestRunSkillScriptMemoryLimit(t *testing.T) {
	requireBwrap(t)
	ws := scriptWorkspace(t)
	seen, dir, _ := converse(t, ws, []looptest.Reply{
		call1("l1", "load_skill", `{"name":"tools"}`),
		call1("m1", "run_skill_script", `{"skill":"tools","path":"scripts/hog.py"}`),
	}, func(o *Options) {
		o.AllowTools = []string{"run_skill_script"}
		o.AllowSkillScripts = []string{"tools:scripts/hog.py"}
		o.ScriptMemoryLimit = 64 << 20
	}, nil)
	if !strings.Contains(seen["m1"], `"status":"memory_limit"`) || strings.Contains(seen["m1"], "allocated") {
		t.Errorf("the model saw %s", seen["m1"])
	}
	var ex record.ScriptExecutions
	testenv.Must(t, artifacts.ReadJSON(filepath.Join(dir, record.FileScriptExecutions), record.TypeScriptExecutions, record.Version, &ex))
	if len(ex.Executions) != 1 {
		t.Fatalf("executions: %+v", ex.Executions)
	}
	e := ex.Executions[0]
	if e.Status != "memory_limit" || e.MemoryLimitBytes != 64<<20 || (e.MemoryLimit != "memory-cgroup" && e.MemoryLimit != "rss-watchdog") {
		t.Errorf("record: status %q, limit %d by %q", e.Status, e.MemoryLimitBytes, e.MemoryLimit)
	}
}

func TestRunSkillScriptDeno(t *testing.T) {
	requireBwrap(t)
	_, err := exec.LookPath("deno")
	testenv.Need(t, "deno", err)
	ws := scriptWorkspace(t)
	seen, _, _ := converse(t, ws, []looptest.Reply{
		call1("l1", "load_skill", `{"name":"tools"}`),
		call1("d1", "run_skill_script", `{"skill":"tools","path":"scripts/hello.ts"}`),
	}, func(o *Options) {
		o.AllowTools = []string{"run_skill_script"}
		o.AllowSkillScripts = []string{"tools:scripts/hello.ts"}
	}, nil)
	if !strings.Contains(seen["d1"], "hi from deno tools") {
		t.Errorf("deno: %s", seen["d1"])
	}
}

func TestRunSkillScriptNotOfferedByDefault(t *testing.T) {
	ws := scriptWorkspace(t)
	_, _, reqs := converse(t, ws, nil, nil, nil)
	if strings.Contains(string(reqs[0].Body), "run_skill_script") {
		t.Error("run_skill_script offered without --allow-tool run_skill_script")
	}
}

// TestRunSkillScriptLandlock runs an allowed script under the landlock
// backend: host paths, a verified staged copy, the run directory out of
// reach.
func TestRunSkillScriptLandlock(t *testing.T) {
	exe, _ := os.Executable()
	_, err := scripts.Probe(context.Background(), scripts.BackendLandlock, exe)
	testenv.Need(t, "landlock", err)
	ws := t.TempDir()
	testenv.WriteTree(t, ws, map[string]string{
		"skills/t/SKILL.md":       "---\nname: t\ndescription: Tools. Use for tools.\n---\nbody\n",
		"skills/t/scripts/go.sh":  "#!/bin/bash\nsource \"$(dirname \"$0\")/lib.sh\"\nhello > out/made.txt\ncat .harness/runs/*/run.json 2>/dev/null && echo SAW-RUNS\ntouch .harness/runs/x 2>/dev/null && echo WROTE-RUNS\necho \"in $PWD\"\n",
		"skills/t/scripts/lib.sh": "hello() { echo hello; }\n",
		"out/.keep":               "",
	})
	seen, dir, _ := converse(t, ws, []looptest.Reply{
		call1("l1", "load_skill", `{"name":"t"}`),
		call1("s1", "run_skill_script", `{"skill":"t","path":"scripts/go.sh"}`),
	}, func(o *Options) {
		o.AllowTools, o.AllowSkillScripts, o.Sandbox = []string{"run_skill_script"}, []string{"t:scripts/go.sh"}, "landlock"
	}, nil)
	if !strings.Contains(seen["s1"], `"exitCode":0`) || strings.Contains(seen["s1"], "SAW-RUNS") || strings.Contains(seen["s1"], "WROTE-RUNS") {
		t.Errorf("the model saw %s", seen["s1"])
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "out", "made.txt")); string(b) != "hello\n" {
		t.Errorf("made.txt = %q", b)
	}
	var ex record.ScriptExecutions
	testenv.Must(t, artifacts.ReadJSON(filepath.Join(dir, record.FileScriptExecutions), "harness.skill-script-executions", 1, &ex))
	if len(ex.Executions) != 1 || ex.Executions[0].SandboxBackend != "landlock" || ex.Executions[0].ExecutionTarget != "sandbox" {
		t.Errorf("executions: %+v", ex.Executions)
	}
}
