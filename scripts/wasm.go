package scripts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
)

// BackendWasm runs a WebAssembly module (WASI preview 1) inside harness's
// own process under wazero: no host access but the file systems handed
// to it, no network (wazero gives a module no sockets unless asked), no
// namespaces needed, so it works where bwrap and Landlock cannot.
const BackendWasm Backend = "wasm"

// RuntimeWasm is the runtime of a scripts/*.wasm resource.
const RuntimeWasm = "wasm"

// DefaultWasmMemory is the linear-memory cap of one module
// (--wasm-memory-limit).
const DefaultWasmMemory = 64 << 20

// WasmMount makes a file system visible to a module at Guest. FS must be
// confined by construction (an os.Root's FS, or the workspace's): wazero's
// own directory mounts follow symbolic links out of the mount.
type WasmMount struct {
	FS    fs.FS
	Guest string
	// Writer, when set, lets the module create and replace files and make
	// directories there, by the writer's rules (nil: read-only).
	Writer WasmWriter
}

// WasmSpec is one execution of a module.
type WasmSpec struct {
	Module []byte // the verified bytes
	Key    string // their digest: the compilation is reused per key
	Args   []string
	Env    []string // KEY=VALUE; nothing else is visible
	Stdin  []byte
	Mounts []WasmMount
	// Timeout bounds wall time: the context's end closes the module.
	Timeout   time.Duration
	OutputCap int
}

// WasmEngine compiles each module once per run and runs instances of it.
// Memory is capped per instance by the allocator, so one engine serves
// every call of a run.
type WasmEngine struct {
	memory  uint64
	runtime wazero.Runtime

	mu       sync.Mutex
	compiled map[string]wazero.CompiledModule
}

// compilations is the machine code of every module compiled in this
// process, keyed by wazero on the module's bytes and its own version:
// the runs of a batch or an eval, each with an engine of its own, compile
// a skill's module once between them. It lives in memory only: harness
// runs this code in its own process, so it is never read from a file
// something else could have written. It grows with the distinct modules
// run, which a registry bounds.
var compilations = wazero.NewCompilationCache()

// NewWasmEngine makes the engine of a run; memory caps each instance's
// linear memory in bytes (0: DefaultWasmMemory). Close releases it.
func NewWasmEngine(ctx context.Context, memory uint64) (*WasmEngine, error) {
	if memory == 0 {
		memory = DefaultWasmMemory
	}
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().
		WithCloseOnContextDone(true).
		WithCompilationCache(compilations))
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, r); err != nil {
		r.Close(ctx)
		return nil, fmt.Errorf("wasm: instantiate WASI: %w", err)
	}
	return &WasmEngine{memory: memory, runtime: r, compiled: map[string]wazero.CompiledModule{}}, nil
}

// Close ends the engine's instances. Its compilations stay in the
// process's cache (compilations) for the runs after it: wazero counts
// their users and frees none while one holds it, so closing an engine
// never takes code from another's running module.
func (e *WasmEngine) Close(ctx context.Context) error { return e.runtime.Close(ctx) }

// Compile returns the module compiled for key, compiling it on first use.
func (e *WasmEngine) Compile(ctx context.Context, key string, module []byte) (wazero.CompiledModule, bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if m, ok := e.compiled[key]; ok && key != "" {
		return m, true, nil
	}
	m, err := e.runtime.CompileModule(ctx, module)
	if err != nil {
		return nil, false, &Refusal{Code: "wasm_module_invalid", Msg: fmt.Sprintf("the module is not valid WebAssembly: %v", err)}
	}
	for _, f := range m.ImportedFunctions() {
		if mod, _, _ := f.Import(); mod != wasi_snapshot_preview1.ModuleName {
			m.Close(ctx)
			return nil, false, &Refusal{Code: "wasm_import_refused", Msg: fmt.Sprintf("the module imports %q, which harness does not provide: only WASI preview 1 (%s) is available to a module", mod, wasi_snapshot_preview1.ModuleName)}
		}
	}
	if key != "" {
		e.compiled[key] = m
	}
	return m, false, nil
}

// Run instantiates the module and runs its _start.
func (e *WasmEngine) Run(ctx context.Context, spec WasmSpec) (*Result, error) {
	lim := Limits{OutputCap: spec.OutputCap}.withDefaults()
	timeout := spec.Timeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	start := time.Now()
	compiled, _, err := e.Compile(ctx, spec.Key, spec.Module)
	if err != nil {
		return nil, err
	}
	if spec.Key == "" {
		defer compiled.Close(ctx)
	}
	stdout := &capped{max: lim.OutputCap}
	stderr := &capped{max: lim.OutputCap}
	alloc := &cappedAllocator{max: e.memory}
	runCtx, cancel := context.WithTimeout(experimental.WithMemoryAllocator(ctx, alloc), timeout)
	defer cancel()
	ending := &wasmEnding{ctx: runCtx}
	fsc := wazero.NewFSConfig()
	for _, m := range spec.Mounts {
		if m.Writer != nil {
			fsc = fsc.(sysfs.FSConfig).WithSysFSMount(writableFS{AdaptFS: &sysfs.AdaptFS{FS: m.FS}, w: m.Writer, ending: ending}, m.Guest)
			continue
		}
		fsc = fsc.WithFSMount(m.FS, m.Guest)
	}
	cfg := wazero.NewModuleConfig().
		WithName(""). // anonymous: calls of one module may overlap
		WithArgs(spec.Args...).
		WithStdout(stdout).WithStderr(stderr).
		WithStdin(bytes.NewReader(spec.Stdin)).
		WithFSConfig(fsc).
		WithSysWalltime().WithSysNanotime().WithSysNanosleep()
	for _, kv := range spec.Env {
		k, v, _ := cutEnv(kv)
		cfg = cfg.WithEnv(k, v)
	}
	mod, err := e.instantiate(runCtx, compiled, cfg, alloc)
	if mod != nil {
		// Files the module left open are closed now: kept when it ended
		// on its own, as a process's would be, discarded when it was
		// killed (time, memory, a trap), as write_file leaves the old
		// content when it fails.
		ending.finish(wasmEndedNormally(err, alloc))
		mod.Close(ctx)
	}
	res := &Result{
		Backend: BackendWasm, Argv: append([]string{}, spec.Args...), Duration: time.Since(start),
		Stdout: stdout.buf, Stderr: stderr.buf, StdoutLen: stdout.n, StderrLen: stderr.n,
		Truncated:   stdout.n > int64(len(stdout.buf)) || stderr.n > int64(len(stderr.buf)),
		RunAs:       "caller", // harness itself, which the module cannot reach past
		MemoryLimit: "wasm-linear-memory", MemoryExceeded: alloc.exceeded.Load(),
		// A module has no processes to count.
		ProcessLimit: "not-applicable",
	}
	var exit *sys.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		switch exit.ExitCode() {
		case sys.ExitCodeDeadlineExceeded:
			res.ExitCode, res.Signal, res.TimedOut = -1, "deadline", ctx.Err() == nil
		case sys.ExitCodeContextCanceled:
			return res, ctx.Err()
		default:
			res.ExitCode = int(exit.ExitCode())
		}
	case ctx.Err() != nil:
		return res, ctx.Err()
	default:
		// A trap (unreachable, out of bounds, a failed memory.grow that the
		// module did not handle): the module died, as a process would by a
		// signal.
		res.ExitCode, res.Signal = -1, "trap"
		fmt.Fprintf(stderr, "\nwasm: %v\n", err)
		res.Stderr, res.StderrLen = stderr.buf, stderr.n
	}
	return res, nil
}

// instantiate is InstantiateModule, save that a module whose initial
// memory is past the cap is an error rather than a panic: wazero slices
// the minimum out of what the allocator gives and panics on the nil that
// refuses it, which would end harness and every run it holds.
func (e *WasmEngine) instantiate(ctx context.Context, compiled wazero.CompiledModule, cfg wazero.ModuleConfig, alloc *cappedAllocator) (mod api.Module, err error) {
	defer func() {
		if r := recover(); r != nil {
			if !alloc.exceeded.Load() {
				panic(r)
			}
			mod, err = nil, fmt.Errorf("the module's initial memory is past the cap of %d bytes (--wasm-memory-limit)", alloc.max)
		}
	}()
	return e.runtime.InstantiateModule(ctx, compiled, cfg)
}

func wasmEndedNormally(err error, alloc *cappedAllocator) bool {
	if alloc.exceeded.Load() {
		return false
	}
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode() != sys.ExitCodeDeadlineExceeded && exit.ExitCode() != sys.ExitCodeContextCanceled
	}
	return err == nil
}

func cutEnv(kv string) (string, string, bool) {
	for i := 0; i < len(kv); i++ {
		if kv[i] == '=' {
			return kv[:i], kv[i+1:], true
		}
	}
	return kv, "", false
}

// cappedAllocator gives each instance plain Go memory and refuses to grow
// it past max, remembering that it did: a module that runs out of memory
// traps or exits, and the record says why.
type cappedAllocator struct {
	max      uint64
	exceeded atomic.Bool
}

func (a *cappedAllocator) Allocate(_, _ uint64) experimental.LinearMemory {
	return &cappedMemory{a: a}
}

type cappedMemory struct {
	a   *cappedAllocator
	buf []byte
}

func (m *cappedMemory) Reallocate(size uint64) []byte {
	if size > m.a.max {
		m.a.exceeded.Store(true)
		return nil
	}
	if size <= uint64(cap(m.buf)) {
		m.buf = m.buf[:size]
		return m.buf
	}
	// Grow with headroom, as append would, but never past the cap.
	c := max(size, min(uint64(cap(m.buf))*2, m.a.max))
	nb := make([]byte, size, c)
	copy(nb, m.buf)
	m.buf = nb
	return m.buf
}

func (m *cappedMemory) Free() { m.buf = nil }
