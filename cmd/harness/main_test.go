package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/harness-dev/harness/internal/testenv"
	"github.com/harness-dev/harness/scripts"
)

func TestMain(m *testing.M) {
	// Skill scripts under the landlock backend re-execute this binary.
	if code, ok := scripts.HelperDispatch(os.Args); ok {
		os.Exit(code)
	}
	testscript.Main(ownCache{m}, map[string]func(){
		"harness": func() {
			os.Exit(mainWith(os.Args, os.Stdin, os.Stdout, os.Stderr, crashPoint(os.Getenv("HARNESS_TEST_CRASH_AFTER"))))
		},
	})
}

// ownCache runs the tests with a user cache directory of their own: a
// test that calls Main without --snapshot-cache uses the default cache,
// which must not be the developer's. (Each script gets its own in Setup.)
type ownCache struct{ m *testing.M }

func (c ownCache) Run() int {
	dir, err := os.MkdirTemp("", "harness-test-cache-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	testCacheDir = dir
	// Go's build cache is under the user cache directory too: the test
	// programs the scripts build keep the one this machine has, or each
	// run would build the standard library and the MCP SDK from nothing.
	if os.Getenv("GOCACHE") == "" {
		if out, err := exec.Command("go", "env", "GOCACHE").Output(); err == nil {
			os.Setenv("GOCACHE", strings.TrimSpace(string(out)))
		}
	}
	os.Setenv("XDG_CACHE_HOME", dir)
	os.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	return c.m.Run()
}

// testCacheDir is the directory ownCache made for this test binary.
var testCacheDir string

var osWriteFile = os.WriteFile

func TestScripts(t *testing.T) {
	testscript.Run(t, scriptParams(nil))
}

// overResponses are the scripts that say what a run, a resume, limits,
// CFC and an output schema do whatever the wire API: they run again with
// HARNESS_WIRE_API=responses, against the same scripted server's
// /responses endpoint.
var overResponses = []string{
	"run_success", "run_failed", "run_json", "run_cfc", "run_limit_turns", "run_output_schema", "run_stream",
	"run_record_replay", "run_interrupt", "run_provider_failures",
	"resume_after_limit", "resume_journal", "resume_model_change", "continue", "runs_crashed", "run_command_resume",
	"run_stream_cut", "run_record_redacts_key", "run_tool_call_cut", "run_calls_dropped_hostile",
}

func TestScriptsOverResponses(t *testing.T) {
	var files []string
	for _, name := range overResponses {
		files = append(files, filepath.Join("../../testdata/script", name+".txtar"))
	}
	testscript.Run(t, scriptParams(files))
}

// scriptParams runs the scripts in testdata/script, or only files (then
// over the Responses API).
func scriptParams(files []string) testscript.Params {
	wire := "chat"
	if files != nil {
		wire = "responses"
	}
	p := testscript.Params{
		Dir:                 "../../testdata/script",
		RequireExplicitExec: true,
		Condition: func(cond string) (bool, error) {
			if v, ok := strings.CutPrefix(cond, "wire:"); ok {
				return v == wire, nil
			}
			return toolCondition(cond)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exitcode":           cmdExitCode,
			"fakemodel":          cmdFakeModel,
			"fakemodel-requests": cmdFakeModelRequests,
			"fakemodel-wait":     cmdFakeModelWait,
			"fakemodel-count":    cmdFakeModelCount,
			"batch-tasks":        cmdBatchTasks,
			"junit-parse":        cmdJUnitParse,
			"testprogram":        cmdTestProgram,
			"httptarget":         cmdHTTPTarget,
			"gitserve":           cmdGitServe,
			"httpfiles":          cmdHTTPFiles,
			"journal-rewrite":    cmdJournalRewrite,
			"docblock":           cmdDocBlock,
			"build-harness":      cmdBuildHarness,
			"version-ldflags":    cmdVersionLdflags,
			"readme":             cmdReadme,
			"readme-task":        cmdReadmeTask,
			"dirname":            cmdDirName,
			"gocache-seed":       cmdGoCacheSeed,
		},
		Setup: func(env *testscript.Env) error {
			// Scripts must not inherit a developer's model settings.
			for _, k := range []string{"OPENAI_API_KEY", "HARNESS_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID", "HARNESS_WIRE_API"} {
				env.Setenv(k, "")
			}
			if files != nil {
				env.Setenv("HARNESS_WIRE_API", wire)
			}
			env.Values[fakeModelKey{}] = &fakeModelSlot{}
			// The snapshot cache is on by default: each script gets its own.
			env.Setenv("XDG_CACHE_HOME", filepath.Join(env.WorkDir, ".cache"))
			// Nor a developer's own config file.
			env.Setenv("XDG_CONFIG_HOME", filepath.Join(env.WorkDir, ".config"))
			env.Setenv("MCP_FS_SERVER", mcpFilesystemServer())
			// The race detector's settings (the test task's exit without
			// a sleep) reach the scripts that start the race-built binary.
			if v, ok := os.LookupEnv("GORACE"); ok {
				env.Setenv("GORACE", v)
			}
			return usePlainHarness(env)
		},
	}
	if files != nil {
		p.Dir, p.Files = "", files
	}
	return p
}

// mcpFilesystemServer is the reference MCP filesystem server the tools
// task installs from npm.
func mcpFilesystemServer() string {
	p, _ := filepath.Abs("../../.tools/npm/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js")
	return p
}

// cmdTestProgram builds one of the tests' own Go programs and copies it
// into the script's work tree:
//
//	testprogram wasmprobe ws/skills/wasmy/scripts/probe.wasm
//	testprogram mcpserver bin/mcpserver
func cmdTestProgram(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: testprogram wasmprobe|mcpserver DEST")
	}
	dirs := map[string][3]string{
		"wasmprobe": {"scripts/testdata/wasmprobe", "wasip1", "wasm"},
		"mcpserver": {"mcp/testdata/mcpserver", "", ""},
	}
	d, ok := dirs[args[0]]
	if !ok {
		ts.Fatalf("testprogram: unknown program %q", args[0])
	}
	bin, err := testenv.Build(d[0], d[1], d[2])
	ts.Check(err)
	b, err := os.ReadFile(bin)
	ts.Check(err)
	dest := ts.MkAbs(args[1])
	ts.Check(os.MkdirAll(filepath.Dir(dest), 0o755))
	ts.Check(os.WriteFile(dest, b, 0o755))
}

// cmdHTTPTarget serves HTTP on loopback for the rest of the script (a
// host a networked skill may or may not reach), sets $TARGET_PORT and
// writes the port to FILE:
//
//	httptarget ws/port
func cmdHTTPTarget(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: httptarget FILE")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from the host: %s\n", r.URL.Path)
	}))
	ts.Defer(srv.Close)
	port := strconv.Itoa(srv.Listener.Addr().(*net.TCPAddr).Port)
	ts.Setenv("TARGET_PORT", port)
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), []byte(port), 0o644))
}

// cmdExitCode runs a command and checks its exit status:
//
//	exitcode 2 harness run --prompt ''
//
// Its stdout and stderr are kept for the following stdout/stderr checks.
func cmdExitCode(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! exitcode")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: exitcode N command [args...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exitcode: %v", err)
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("exitcode: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d\nstderr:\n%s", args[1], got, want, ts.ReadFile("stderr"))
	}
}

// toolCondition is [tool:NAME] in scripts: whether bwrap, landlock or
// another program a script needs is here. Where tools are required
// (HARNESS_REQUIRE_TOOLS, set by the ci task) a missing one fails the
// script instead of letting it skip.
func toolCondition(cond string) (bool, error) {
	name, ok := strings.CutPrefix(cond, "tool:")
	if !ok {
		return false, fmt.Errorf("unknown condition %q", cond)
	}
	var err error
	switch name {
	case "bwrap":
		_, err = scripts.Probe(context.Background(), scripts.BackendBwrap, "")
	case "landlock":
		exe, _ := os.Executable()
		_, err = scripts.Probe(context.Background(), scripts.BackendLandlock, exe)
	case "mcp-server-filesystem":
		if _, err = exec.LookPath("node"); err == nil {
			_, err = os.Stat(mcpFilesystemServer())
		}
	default:
		_, err = exec.LookPath(name)
	}
	if err != nil && os.Getenv(testenv.RequireVar) != "" {
		return false, fmt.Errorf("%s is required here (%s is set) but unavailable: %v", name, testenv.RequireVar, err)
	}
	return err == nil, nil
}
