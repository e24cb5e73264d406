package scripts

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/testenv"
)

func wasmProbe(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(testenv.BuildProgram(t, "scripts/testdata/wasmprobe", "wasip1", "wasm"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestWasm(t *testing.T) {
	module := wasmProbe(t)
	ws := t.TempDir()
	testenv.WriteTree(t, ws, map[string]string{"notes.txt": "in the workspace"})
	outside := t.TempDir()
	testenv.WriteTree(t, outside, map[string]string{"secret.txt": "host secret"})
	testenv.Must(t, os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(ws, "link")))
	testenv.Must(t, os.Symlink("../../../../../../../../etc/passwd", filepath.Join(ws, "rel-link")))
	root, err := os.OpenRoot(ws)
	testenv.Must(t, err)
	defer root.Close()

	ctx := context.Background()
	e, err := NewWasmEngine(ctx, 16<<20)
	testenv.Must(t, err)
	defer e.Close(ctx)
	run := func(t *testing.T, timeout time.Duration, args ...string) *Result {
		t.Helper()
		res, err := e.Run(ctx, WasmSpec{
			Module: module, Key: "probe", Args: append([]string{"/skills/probe/scripts/probe.wasm"}, args...),
			Env:   []string{"SKILL_NAME=probe", "HOME=/tmp", "PWD=/workspace"},
			Stdin: []byte("from stdin"), Mounts: []WasmMount{{FS: root.FS(), Guest: "/workspace"}},
			Timeout: timeout,
		})
		if err != nil {
			t.Fatalf("run %v: %v", args, err)
		}
		return res
	}
	t.Setenv("HARNESS_TEST_SECRET", "must-not-leak")

	for _, tc := range []struct {
		name    string
		args    []string
		timeout time.Duration
		check   func(*testing.T, *Result)
	}{
		{"args, stdin and only the given environment", []string{"echo", "a", "b"}, 0, func(t *testing.T, r *Result) {
			want := `args=a,b stdin=from stdin skill=probe home="/tmp" secret="" wd=/workspace`
			if r.ExitCode != 0 || strings.TrimSpace(string(r.Stdout)) != want {
				t.Fatalf("exit %d stdout %q stderr %q, want %q", r.ExitCode, r.Stdout, r.Stderr, want)
			}
		}},
		{"reads the workspace", []string{"cat", "/workspace/notes.txt", "notes.txt"}, 0, func(t *testing.T, r *Result) {
			if strings.Count(string(r.Stdout), ": in the workspace") != 2 {
				t.Fatalf("stdout %q", r.Stdout)
			}
		}},
		{"nothing of the host", []string{"cat", "/etc/passwd", "/workspace/../../etc/passwd", "/workspace/link", "/workspace/rel-link", "/proc/self/environ"}, 0, func(t *testing.T, r *Result) {
			out := string(r.Stdout)
			if strings.Contains(out, "root:") || strings.Contains(out, "host secret") || strings.Contains(out, "must-not-leak") {
				t.Fatalf("the module read the host: %q", out)
			}
			if strings.Count(out, "error:") != 5 {
				t.Fatalf("every read must fail: %q", out)
			}
		}},
		{"a mount without a writer is read-only", []string{"write", "/workspace/new.txt"}, 0, func(t *testing.T, r *Result) {
			if r.ExitCode == 0 {
				t.Fatalf("write succeeded: %q", r.Stdout)
			}
			if _, err := os.Stat(filepath.Join(ws, "new.txt")); err == nil {
				t.Fatal("the file was created")
			}
		}},
		{"no symbolic links", []string{"symlink", "/etc/passwd", "/workspace/evil"}, 0, func(t *testing.T, r *Result) {
			if _, err := os.Lstat(filepath.Join(ws, "evil")); r.ExitCode == 0 || err == nil {
				t.Fatalf("link made: exit %d %q", r.ExitCode, r.Stdout)
			}
		}},
		{"no network", []string{"dial", "127.0.0.1:22"}, 0, func(t *testing.T, r *Result) {
			if r.ExitCode == 0 || strings.Contains(string(r.Stdout), "connected") {
				t.Fatalf("dialled out: %q", r.Stdout)
			}
		}},
		{"an endless loop is stopped by the wall-time cap", []string{"spin"}, 500 * time.Millisecond, func(t *testing.T, r *Result) {
			if !r.TimedOut || r.ExitCode != -1 {
				t.Fatalf("timedOut %v exit %d", r.TimedOut, r.ExitCode)
			}
		}},
		{"memory past the cap is refused and recorded", []string{"hog"}, 30 * time.Second, func(t *testing.T, r *Result) {
			if r.ExitCode == 0 || !r.MemoryExceeded {
				t.Fatalf("exit %d memoryExceeded %v stderr %q", r.ExitCode, r.MemoryExceeded, r.Stderr)
			}
		}},
		{"exit code", []string{"exit"}, 0, func(t *testing.T, r *Result) {
			if r.ExitCode != 7 {
				t.Fatalf("exit %d", r.ExitCode)
			}
		}},
		{"output is capped", []string{"flood"}, 0, func(t *testing.T, r *Result) {
			if !r.Truncated || r.StdoutLen != 4096*1024 || len(r.Stdout) != DefaultLimits().OutputCap {
				t.Fatalf("truncated %v len %d kept %d", r.Truncated, r.StdoutLen, len(r.Stdout))
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, tc.timeout, tc.args...)
			if r.Backend != BackendWasm {
				t.Fatalf("backend %q", r.Backend)
			}
			tc.check(t, r)
		})
	}
}

func TestWasmRefusesForeignImports(t *testing.T) {
	ctx := context.Background()
	e, err := NewWasmEngine(ctx, 0)
	testenv.Must(t, err)
	defer e.Close(ctx)
	// (module (import "env" "escape" (func)) (func (export "_start") call 0))
	mod := []byte{0, 'a', 's', 'm', 1, 0, 0, 0,
		1, 4, 1, 0x60, 0, 0, // type: () -> ()
		2, 14, 1, 3, 'e', 'n', 'v', 6, 'e', 's', 'c', 'a', 'p', 'e', 0, 0, // import env.escape
		3, 2, 1, 0, // func 1: type 0
		7, 10, 1, 6, '_', 's', 't', 'a', 'r', 't', 0, 1, // export _start
		10, 6, 1, 4, 0, 0x10, 0, 0x0b} // body: call 0
	_, err = e.Run(ctx, WasmSpec{Module: mod, Args: []string{"x"}})
	var ref *Refusal
	if !errors.As(err, &ref) || ref.Code != "wasm_import_refused" {
		t.Fatalf("err %v", err)
	}
	_, err = e.Run(ctx, WasmSpec{Module: []byte("not wasm"), Args: []string{"x"}})
	if !errors.As(err, &ref) || ref.Code != "wasm_module_invalid" {
		t.Fatalf("err %v", err)
	}
}
