package scripts

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/egress"
	"github.com/harness-dev/harness/internal/testenv"
)

// BenchmarkSandboxTrivial is the cost of one sandboxed call of a trivial
// bash script (prlimit, bwrap namespaces, mounts, bash start), to compare
// with BenchmarkBashDirect: the difference is the sandbox overhead.
func BenchmarkSandboxTrivial(b *testing.B) {
	if _, err := Probe(context.Background(), BackendBwrap, ""); err != nil {
		b.Skipf("bwrap unavailable: %v", err)
	}
	ws := b.TempDir()
	skill := trivialSkill(b)
	spec := Spec{
		Argv: []string{"bash", "/workspace/skills/s/t.sh"}, Env: []string{"PATH=/usr/bin:/bin"}, Path: os.Getenv("PATH"), Cwd: "/workspace",
		Mounts:  []Mount{{Host: ws, Sandbox: "/workspace", Writable: true}, {Host: skill, Sandbox: "/workspace/skills/s"}},
		Timeout: 10 * time.Second,
	}
	for b.Loop() {
		res, err := Run(context.Background(), BackendBwrap, spec)
		if err != nil || res.ExitCode != 0 {
			b.Fatal(err, res)
		}
	}
}

// BenchmarkSandboxNetworked is BenchmarkSandboxTrivial with an egress
// proxy: the forwarder (this test binary, as the harness binary would be)
// starts first and re-executes itself to drop Unix sockets before the
// script runs.
func BenchmarkSandboxNetworked(b *testing.B) {
	if _, err := Probe(context.Background(), BackendBwrap, ""); err != nil {
		b.Skipf("bwrap unavailable: %v", err)
	}
	dir, err := MkdirReachable("harness-bench-net-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "t.sh"), []byte("#!/bin/bash\ntrue\n"), 0o555)
	rules, _ := egress.ParseRules([]string{"localhost"})
	proxy, err := egress.Listen(filepath.Join(dir, "egress.sock"), egress.Policy{Declared: rules, Allowed: rules}, func(egress.Attempt) error { return nil })
	if err != nil {
		b.Fatal(err)
	}
	defer proxy.Close()
	spec := Spec{
		Argv: []string{"bash", "/skill/t.sh"}, Env: []string{"PATH=/usr/bin:/bin"}, Path: os.Getenv("PATH"), Cwd: "/tmp",
		Mounts: []Mount{{Host: dir, Sandbox: "/skill"}}, Helper: helper(b), Egress: filepath.Join(dir, "egress.sock"),
		Timeout: 10 * time.Second,
	}
	for b.Loop() {
		res, err := Run(context.Background(), BackendBwrap, spec)
		if err != nil || res.ExitCode != 0 {
			b.Fatal(err, res)
		}
	}
}

func BenchmarkBashDirect(b *testing.B) {
	for b.Loop() {
		if err := exec.Command("bash", "-c", "true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWasmStart is one call of a Go-built WASI module that exits at
// once: cold compiles the module in a fresh engine every time, cached
// reuses the run's compilation (what every call after a run's first
// pays). Compare with BenchmarkSandboxTrivial.
func BenchmarkWasmStart(b *testing.B) {
	module, err := os.ReadFile(testenv.BuildProgram(b, "scripts/testdata/wasmprobe", "wasip1", "wasm"))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	spec := WasmSpec{Module: module, Key: "probe", Args: []string{"probe", "exit0"}}
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			e, err := NewWasmEngine(ctx, 0)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := e.Run(ctx, spec); err != nil {
				b.Fatal(err)
			}
			e.Close(ctx)
		}
	})
	// An empty module (_start returns at once): the engine's own cost,
	// without the Go runtime's start-up inside the module.
	empty := []byte{0, 'a', 's', 'm', 1, 0, 0, 0, 1, 4, 1, 0x60, 0, 0, 3, 2, 1, 0,
		7, 10, 1, 6, '_', 's', 't', 'a', 'r', 't', 0, 0, 10, 4, 1, 2, 0, 0x0b}
	b.Run("cached-empty", func(b *testing.B) {
		e, err := NewWasmEngine(ctx, 0)
		if err != nil {
			b.Fatal(err)
		}
		defer e.Close(ctx)
		for b.Loop() {
			if _, err := e.Run(ctx, WasmSpec{Module: empty, Key: "empty", Args: []string{"empty"}}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		e, err := NewWasmEngine(ctx, 0)
		if err != nil {
			b.Fatal(err)
		}
		defer e.Close(ctx)
		for b.Loop() {
			if _, err := e.Run(ctx, spec); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkSandboxManifest is BenchmarkSandboxTrivial with the workspace
// narrowed to a manifest of five paths (three read, two write), .git kept
// read-only and the execute limit, against the same call with the whole
// workspace (sub-benchmark none): what enforcing a manifest costs a start.
// The helper is harness-sandbox, built here as `go tool task build`
// builds it.
func BenchmarkSandboxManifest(b *testing.B) {
	dir, err := MkdirReachable("harness-bench-helper-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	sandboxHelper := filepath.Join(dir, HelperName)
	build := exec.Command("go", "build", "-o", sandboxHelper, "../cmd/harness-sandbox")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build the helper: %v\n%s", err, out)
	}
	for _, backend := range []Backend{BackendBwrap, BackendLandlock} {
		b.Run(string(backend), func(b *testing.B) {
			if _, err := Probe(context.Background(), backend, sandboxHelper); err != nil {
				b.Skipf("%s unavailable: %v", backend, err)
			}
			ws, err := MkdirReachable("harness-bench-ws-")
			if err != nil {
				b.Fatal(err)
			}
			defer os.RemoveAll(ws)
			os.Chmod(ws, 0o755)
			for _, d := range []string{"src", "docs", "vendor", "out", "build", ".git/hooks"} {
				os.MkdirAll(filepath.Join(ws, d), 0o755)
			}
			skill := trivialSkill(b)
			cwd, script := "/workspace", "/skill/t.sh"
			if backend != BackendBwrap {
				cwd, script = ws, filepath.Join(skill, "t.sh")
			}
			for _, c := range []struct {
				name  string
				mount Mount
				exec  bool
			}{
				{"none", Mount{Writable: true}, false},
				{"five-paths", Mount{Only: []Part{{Rel: "src"}, {Rel: "docs"}, {Rel: "vendor"}, {Rel: "out", Writable: true}, {Rel: "build", Writable: true}}, ReadOnly: []string{".git"}}, true},
			} {
				b.Run(c.name, func(b *testing.B) {
					m := c.mount
					m.Host, m.Sandbox = ws, "/workspace"
					spec := Spec{
						Argv: []string{"bash", script}, Env: []string{"PATH=/usr/bin:/bin"}, Path: os.Getenv("PATH"), Cwd: cwd,
						Mounts: []Mount{m, {Host: skill, Sandbox: "/skill"}}, Helper: sandboxHelper, LimitExec: c.exec,
						Timeout: 10 * time.Second,
					}
					for b.Loop() {
						res, err := Run(context.Background(), backend, spec)
						if err != nil || res.ExitCode != 0 {
							b.Fatal(err, res)
						}
					}
				})
			}
		})
	}
}

// trivialSkill is a skill directory holding t.sh, a bash script that does
// nothing, where the sandbox user can read it (as root, scripts run as
// uid 65534); it is removed when b ends.
func trivialSkill(b testing.TB) string {
	skill, err := MkdirReachable("harness-bench-skill-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(skill) })
	os.Chmod(skill, 0o755)
	os.WriteFile(filepath.Join(skill, "t.sh"), []byte("#!/bin/bash\ntrue\n"), 0o555)
	return skill
}

// BenchmarkBwrapBare is bwrap with its namespaces and nothing else around
// bash -c true: the floor BenchmarkSandboxTrivial is compared with.
func BenchmarkBwrapBare(b *testing.B) {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		b.Skipf("bwrap unavailable: %v", err)
	}
	for b.Loop() {
		if err := exec.Command(bwrap, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "bash", "-c", "true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSandboxRatio runs, in each iteration, one bare bwrap (as
// BenchmarkBwrapBare) and one call of each sandbox start that
// BenchmarkSandboxTrivial and BenchmarkSandboxManifest measure, one after
// the other, and reports each start's median against bare bwrap's median
// (metrics NAME-x): measured in the same minute, the ratios hold when the
// machine's load moves every figure. As root, with a cgroup v1 cpuacct
// hierarchy, it also reports the median CPU time of each start's whole
// process tree, harness's own part included (NAME-cpu-ms; bare-cpu-ms),
// from a cpuacct group holding only this process for the benchmark.
func BenchmarkSandboxRatio(b *testing.B) {
	if _, err := Probe(context.Background(), BackendBwrap, ""); err != nil {
		b.Skipf("bwrap unavailable: %v", err)
	}
	bwrap, _ := exec.LookPath("bwrap")
	dir, err := MkdirReachable("harness-bench-helper-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	sandboxHelper := filepath.Join(dir, HelperName)
	build := exec.Command("go", "build", "-o", sandboxHelper, "../cmd/harness-sandbox")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build the helper: %v\n%s", err, out)
	}
	ws, err := MkdirReachable("harness-bench-ws-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(ws)
	os.Chmod(ws, 0o755)
	for _, d := range []string{"src", "docs", "vendor", "out", "build", ".git/hooks", "skills/s"} {
		os.MkdirAll(filepath.Join(ws, d), 0o755)
	}
	skill := trivialSkill(b)
	whole := Mount{Host: ws, Sandbox: "/workspace", Writable: true}
	five := Mount{Host: ws, Sandbox: "/workspace", Only: []Part{{Rel: "src"}, {Rel: "docs"}, {Rel: "vendor"}, {Rel: "out", Writable: true}, {Rel: "build", Writable: true}}, ReadOnly: []string{".git"}}
	run := func(backend Backend, spec Spec) func() error {
		return func() error {
			res, err := Run(context.Background(), backend, spec)
			if err == nil && res.ExitCode != 0 {
				err = fmt.Errorf("exit %d: %s", res.ExitCode, res.Stderr)
			}
			return err
		}
	}
	call := func(backend Backend, m Mount, limitExec bool) func() error {
		cwd, script := "/workspace", "/skill/t.sh"
		if backend != BackendBwrap {
			cwd, script = ws, filepath.Join(skill, "t.sh")
		}
		return run(backend, Spec{
			Argv: []string{"bash", script}, Env: []string{"PATH=/usr/bin:/bin"}, Path: os.Getenv("PATH"), Cwd: cwd,
			Mounts: []Mount{m, {Host: skill, Sandbox: "/skill"}}, Helper: sandboxHelper, LimitExec: limitExec, Timeout: 10 * time.Second,
		})
	}
	starts := []struct {
		name string
		run  func() error
	}{
		{"bare", func() error {
			return exec.Command(bwrap, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "bash", "-c", "true").Run()
		}},
		// BenchmarkSandboxTrivial's call, then BenchmarkSandboxManifest's.
		{"trivial", run(BackendBwrap, Spec{
			Argv: []string{"bash", "/workspace/skills/s/t.sh"}, Env: []string{"PATH=/usr/bin:/bin"}, Path: os.Getenv("PATH"), Cwd: "/workspace",
			Mounts: []Mount{whole, {Host: skill, Sandbox: "/workspace/skills/s"}}, Timeout: 10 * time.Second,
		})},
		{"bwrap-none", call(BackendBwrap, whole, false)},
		{"bwrap-five", call(BackendBwrap, five, true)},
		{"landlock-none", call(BackendLandlock, whole, false)},
		{"landlock-five", call(BackendLandlock, five, true)},
	}
	if _, err := Probe(context.Background(), BackendLandlock, sandboxHelper); err != nil {
		starts = starts[:4]
	}
	cpu := ownCPUAccount(b)
	wall := make([][]time.Duration, len(starts))
	used := make([][]time.Duration, len(starts))
	for _, s := range starts { // the views and the mapping namespace, once
		if err := s.run(); err != nil {
			b.Fatal(s.name, err)
		}
	}
	for b.Loop() {
		for i, s := range starts {
			c0, t0 := cpu(), time.Now()
			if err := s.run(); err != nil {
				b.Fatal(s.name, err)
			}
			wall[i] = append(wall[i], time.Since(t0))
			used[i] = append(used[i], cpu()-c0)
		}
	}
	median := func(d []time.Duration) float64 {
		s := slices.Clone(d)
		slices.Sort(s)
		return float64(s[len(s)/2]) / float64(time.Millisecond)
	}
	b.ReportMetric(median(wall[0]), "bare-ms")
	if cpu() > 0 {
		b.ReportMetric(median(used[0]), "bare-cpu-ms")
	}
	for i, s := range starts[1:] {
		b.ReportMetric(median(wall[i+1])/median(wall[0]), s.name+"-x")
		if cpu() > 0 {
			b.ReportMetric(median(used[i+1]), s.name+"-cpu-ms")
		}
	}
}

// ownCPUAccount moves this process into a cpuacct group of its own for the
// rest of b and returns a reader of the CPU time used in it, children and
// their sandboxes included wherever they are reparented; where that cannot
// be done (not root, no cgroup v1 cpuacct) the reader returns 0.
func ownCPUAccount(b *testing.B) func() time.Duration {
	none := func() time.Duration { return 0 }
	const root = "/sys/fs/cgroup/cpuacct"
	if os.Geteuid() != 0 {
		return none
	}
	dir := filepath.Join(root, fmt.Sprintf("harness-bench-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return none
	}
	pid := []byte(strconv.Itoa(os.Getpid()))
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), pid, 0); err != nil {
		os.Remove(dir)
		return none
	}
	b.Cleanup(func() {
		os.WriteFile(filepath.Join(root, "cgroup.procs"), pid, 0)
		retry(time.Second, func() bool { return os.Remove(dir) == nil })
	})
	return func() time.Duration {
		raw, err := os.ReadFile(filepath.Join(dir, "cpuacct.usage"))
		if err != nil {
			return 0
		}
		n, _ := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
		return time.Duration(n)
	}
}
