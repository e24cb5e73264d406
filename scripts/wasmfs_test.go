package scripts

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/testenv"
	"github.com/harness-dev/harness/workspace"
)

// wsWriter is the workspace's write rules as a module sees them (the
// run's own adapter, in tools, also records what was written).
type wsWriter struct{ ws *workspace.Workspace }

func (w wsWriter) OpenWrite(rel string, keep bool) (*os.File, func() error, func(), error) {
	p, err := w.ws.Create(rel, keep)
	if err != nil {
		return nil, nil, nil, syscall.EACCES
	}
	return p.File, p.Commit, p.Abort, nil
}

func (w wsWriter) Mkdir(rel string) error {
	if err := w.ws.Mkdir(rel); err != nil {
		var r *workspace.Refusal
		if errors.As(err, &r) && r.Code == "already_exists" {
			return syscall.EEXIST
		}
		return syscall.EACCES
	}
	return nil
}

func TestWasmWritesByWriteFileRules(t *testing.T) {
	module := wasmProbe(t)
	host, _ := filepath.EvalSymlinks(t.TempDir())
	outside := t.TempDir()
	testenv.WriteTree(t, host, map[string]string{"keep.txt": "old", "log.txt": "one\n", ".harness/runs/r/run.json": "{}", "sub/x": ""})
	testenv.Must(t, os.Symlink(outside, filepath.Join(host, "out")))
	testenv.Must(t, os.Symlink(filepath.Join(outside, "f"), filepath.Join(host, "dangling")))
	testenv.Must(t, os.Symlink(".harness/runs", filepath.Join(host, "runs-link")))
	ws, err := workspace.Open(host, "/workspace", "/workspace", []string{filepath.Join(host, ".harness")})
	testenv.Must(t, err)
	defer ws.Close()
	skill := t.TempDir()
	testenv.WriteTree(t, skill, map[string]string{"SKILL.md": "skill"})
	skillRoot, err := os.OpenRoot(skill)
	testenv.Must(t, err)
	defer skillRoot.Close()

	ctx := context.Background()
	e, err := NewWasmEngine(ctx, 32<<20)
	testenv.Must(t, err)
	defer e.Close(ctx)
	run := func(timeout time.Duration, args ...string) string {
		t.Helper()
		res, err := e.Run(ctx, WasmSpec{
			Module: module, Key: "probe", Args: append([]string{"probe.wasm"}, args...), Env: []string{"PWD=/workspace"},
			Mounts:  []WasmMount{{FS: ws.FS(), Guest: "/workspace", Writer: wsWriter{ws}}, {FS: skillRoot.FS(), Guest: "/skill"}},
			Timeout: timeout,
		})
		if err != nil {
			t.Fatalf("run %v: %v", args, err)
		}
		return string(res.Stdout) + string(res.Stderr)
	}
	read := func(rel string) string {
		b, _ := os.ReadFile(filepath.Join(host, rel))
		return string(b)
	}

	if out := run(0, "write", "/workspace/new.txt"); !strings.Contains(out, "wrote") || read("new.txt") != "written by a module" {
		t.Errorf("create: %s / %q", out, read("new.txt"))
	}
	if out := run(0, "write", "keep.txt"); !strings.Contains(out, "wrote") || read("keep.txt") != "written by a module" {
		t.Errorf("replace: %s / %q", out, read("keep.txt"))
	}
	if out := run(0, "append", "log.txt", "two\n"); !strings.Contains(out, "appended") || read("log.txt") != "one\ntwo\n" {
		t.Errorf("append: %s / %q", out, read("log.txt"))
	}
	if out := run(0, "mkdir", "/workspace/made"); !strings.Contains(out, "made") {
		t.Errorf("mkdir: %s", out)
	}
	if out := run(0, "write", "/workspace/made/in.txt"); read("made/in.txt") != "written by a module" {
		t.Errorf("write in a made directory: %s", out)
	}
	if out := run(0, "write-unclosed", "/workspace/open.txt"); read("open.txt") != "left open" {
		t.Errorf("a file left open at a normal exit is kept: %s / %q", out, read("open.txt"))
	}
	if out := run(300*time.Millisecond, "write-spin", "/workspace/half.txt"); fileExists(filepath.Join(host, "half.txt")) {
		t.Errorf("a killed module's file landed: %s / %q", out, read("half.txt"))
	}

	// Refused, and nothing changes.
	for _, tc := range [][]string{
		{"write", "/workspace/.harness/runs/r/run.json"},
		{"write", "/workspace/.harness/new"},
		{"write", "/workspace/runs-link/r/run.json"},
		{"write", "/workspace/runs-link/forged"},
		{"write", "/workspace/out/escaped"},
		{"write", "/workspace/dangling"},
		{"write", "/workspace/../escaped"},
		{"write", "/skill/SKILL.md"},
		{"write", "/etc/passwd"},
		{"mkdir", "/workspace/.harness/x"},
		{"mkdir", "/workspace/runs-link/x"},
		{"mkdir", "/workspace/out/x"},
		{"append", "/workspace/dangling", "x"},
	} {
		out := run(0, tc...)
		if !strings.Contains(out, "error:") {
			t.Errorf("%v was not refused: %s", tc, out)
		}
	}
	if out := run(0, "remove", "/workspace/keep.txt"); strings.Count(out, "<nil>") != 0 || read("keep.txt") != "written by a module" {
		t.Errorf("remove and rename must fail: %s", out)
	}
	if read(".harness/runs/r/run.json") != "{}" || read("../escaped") != "" {
		t.Error("a protected or outside file changed")
	}
	entries, _ := os.ReadDir(outside)
	if len(entries) != 0 {
		t.Errorf("wrote outside the workspace: %v", entries)
	}
	for _, p := range []string{".harness/x", ".harness/new", ".harness/runs/forged", ".harness/runs/x"} {
		if fileExists(filepath.Join(host, p)) {
			t.Errorf("%s was made", p)
		}
	}
	// No temporary file is left behind by any of it.
	matches, _ := filepath.Glob(filepath.Join(host, "*", ".*.harness-*"))
	top, _ := filepath.Glob(filepath.Join(host, ".*.harness-*"))
	if len(matches)+len(top) != 0 {
		t.Errorf("leftovers: %v %v", matches, top)
	}
}

func fileExists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
