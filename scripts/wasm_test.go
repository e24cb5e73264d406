package scripts

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
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

// TestWasmEnginesShareOnlyCode: the engines of a batch's runs share the
// machine code of a module, and nothing else. Each instance gets its own
// engine's memory cap, whatever the other engines run at the same time; an
// engine closed, or a run without a key that drops its compilation, leaves
// the others' modules running; a refused module stays refused in every
// engine.
func TestWasmEnginesShareOnlyCode(t *testing.T) {
	module := wasmProbe(t)
	ctx := context.Background()
	engine := func(memory uint64) *WasmEngine {
		e, err := NewWasmEngine(ctx, memory)
		testenv.Must(t, err)
		t.Cleanup(func() { e.Close(ctx) })
		return e
	}
	run := func(e *WasmEngine, key string, timeout time.Duration, args ...string) *Result {
		res, err := e.Run(ctx, WasmSpec{Module: module, Key: key, Args: append([]string{"probe"}, args...), Timeout: timeout})
		if err != nil {
			t.Errorf("run %v: %v", args, err)
			return &Result{ExitCode: -2}
		}
		return res
	}
	small, large := engine(1<<20), engine(64<<20)
	if r := run(large, "probe", 0, "echo", "x"); r.ExitCode != 0 {
		t.Fatalf("large engine: exit %d stderr %q", r.ExitCode, r.Stderr)
	}
	// Same bytes, same key, concurrently: the small cap binds the small
	// engine's instance only.
	var wg sync.WaitGroup
	results := make([]*Result, 8)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := large
			if i%2 == 0 {
				e = small
			}
			results[i] = run(e, "probe", 30*time.Second, "echo", "x")
		}()
	}
	wg.Wait()
	for i, r := range results {
		if i%2 == 0 && (r.ExitCode == 0 || !r.MemoryExceeded) {
			t.Errorf("small engine ran past its 1 MiB cap: exit %d", r.ExitCode)
		}
		if i%2 == 1 && (r.ExitCode != 0 || r.MemoryExceeded) {
			t.Errorf("large engine: exit %d memoryExceeded %v stderr %q", r.ExitCode, r.MemoryExceeded, r.Stderr)
		}
	}

	// A run without a key closes its compilation when it ends; an engine
	// closed while another runs the same module takes nothing with it.
	other := engine(64 << 20)
	if r := run(other, "", 0, "echo", "x"); r.ExitCode != 0 {
		t.Fatalf("keyless run: exit %d stderr %q", r.ExitCode, r.Stderr)
	}
	spin := make(chan *Result)
	go func() { spin <- run(large, "probe", 300*time.Millisecond, "spin") }()
	testenv.Must(t, other.Close(ctx))
	testenv.Must(t, small.Close(ctx))
	if r := <-spin; !r.TimedOut {
		t.Errorf("the spinning module ended by something else than its deadline: exit %d signal %q stderr %q", r.ExitCode, r.Signal, r.Stderr)
	}
	if r := run(large, "probe", 0, "exit"); r.ExitCode != 7 {
		t.Errorf("after another engine closed: exit %d stderr %q", r.ExitCode, r.Stderr)
	}
	if r := run(engine(64<<20), "probe", 0, "exit"); r.ExitCode != 7 {
		t.Errorf("a new engine: exit %d stderr %q", r.ExitCode, r.Stderr)
	}

	// (module (import "env" "escape" (func)) (func (export "_start") call 0))
	foreign := []byte{0, 'a', 's', 'm', 1, 0, 0, 0,
		1, 4, 1, 0x60, 0, 0,
		2, 14, 1, 3, 'e', 'n', 'v', 6, 'e', 's', 'c', 'a', 'p', 'e', 0, 0,
		3, 2, 1, 0,
		7, 10, 1, 6, '_', 's', 't', 'a', 'r', 't', 0, 1,
		10, 6, 1, 4, 0, 0x10, 0, 0x0b}
	for i, e := range []*WasmEngine{large, large, engine(0)} {
		for _, key := range []string{"", "foreign"} {
			_, err := e.Run(ctx, WasmSpec{Module: foreign, Key: key, Args: []string{"x"}})
			var ref *Refusal
			if !errors.As(err, &ref) || ref.Code != "wasm_import_refused" {
				t.Errorf("engine %d, key %q: a module with a foreign import: err %v", i, key, err)
			}
		}
	}
	if r := run(large, "probe", 0, "exit"); r.ExitCode != 7 {
		t.Errorf("after a refused module: exit %d stderr %q", r.ExitCode, r.Stderr)
	}
}

// TestWasmInitialMemoryOverCap: a module whose declared initial memory is
// already past the cap (a skill's (memory 2) under a one-page cap, a Go
// module's few MiB under --wasm-memory-limit 1MiB) is a run that ran out of
// memory, recorded as such; it does not bring harness down.
func TestWasmInitialMemoryOverCap(t *testing.T) {
	ctx := context.Background()
	e, err := NewWasmEngine(ctx, 1<<16)
	testenv.Must(t, err)
	defer e.Close(ctx)
	// (module (memory 2) (func (export "_start")))
	mod := []byte{0, 'a', 's', 'm', 1, 0, 0, 0,
		1, 4, 1, 0x60, 0, 0, // type: () -> ()
		3, 2, 1, 0, // func 0: type 0
		5, 3, 1, 0, 2, // memory: min 2 pages, no max
		7, 10, 1, 6, '_', 's', 't', 'a', 'r', 't', 0, 0, // export _start
		10, 4, 1, 2, 0, 0x0b} // body: nothing
	for _, key := range []string{"", "big"} {
		res, err := e.Run(ctx, WasmSpec{Module: mod, Key: key, Args: []string{"x"}})
		if err != nil {
			t.Fatalf("key %q: %v", key, err)
		}
		if res.ExitCode == 0 || !res.MemoryExceeded {
			t.Errorf("key %q: exit %d memoryExceeded %v stderr %q", key, res.ExitCode, res.MemoryExceeded, res.Stderr)
		}
	}
	// One page is within the cap: the same engine runs it.
	mod[22] = 1 // the memory section's minimum
	if res, err := e.Run(ctx, WasmSpec{Module: mod, Args: []string{"x"}}); err != nil || res.ExitCode != 0 || res.MemoryExceeded {
		t.Fatalf("one page: %v %+v", err, res)
	}
}
