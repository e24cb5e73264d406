package scripts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Backend is how a script is confined.
type Backend string

const (
	BackendAuto     Backend = "auto"
	BackendBwrap    Backend = "bwrap"
	BackendLandlock Backend = "landlock" // a confined host process, where bwrap cannot start
	BackendNone     Backend = "none"     // the host, only on the operator's request
)

// Limits bound one execution. Zero fields take DefaultLimits.
type Limits struct {
	CPUSeconds uint64 // RLIMIT_CPU
	FileSize   uint64 // RLIMIT_FSIZE, bytes
	OpenFiles  uint64 // RLIMIT_NOFILE
	Processes  uint64 // RLIMIT_NPROC, and the pids cgroup where one can be made
	OutputCap  int    // bytes kept of stdout and of stderr each
	// Memory caps the resident memory of the script's processes together:
	// a memory cgroup where one can be made, else a watchdog that samples
	// and kills.
	Memory uint64
}

// DefaultMemory is the memory cap of one script call (--script-memory-limit).
const DefaultMemory = 1 << 30

// DefaultLimits are generous for a build helper and small for an attack.
func DefaultLimits() Limits {
	return Limits{CPUSeconds: 120, FileSize: 64 << 20, OpenFiles: 256, Processes: 256, OutputCap: 1 << 20, Memory: DefaultMemory}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.CPUSeconds == 0 {
		l.CPUSeconds = d.CPUSeconds
	}
	if l.FileSize == 0 {
		l.FileSize = d.FileSize
	}
	if l.OpenFiles == 0 {
		l.OpenFiles = d.OpenFiles
	}
	if l.Processes == 0 {
		l.Processes = d.Processes
	}
	if l.OutputCap == 0 {
		l.OutputCap = d.OutputCap
	}
	if l.Memory == 0 {
		l.Memory = d.Memory
	}
	return l
}

// Spec is one execution.
type Spec struct {
	Argv   []string // argv[0] is a runtime name (bash, deno, ...), resolved on Path
	Env    []string // the complete environment; nothing is inherited
	Path   string   // where runtimes are looked up on the host
	Cwd    string   // working directory as the sandbox sees it
	Mounts []Mount
	// Hide are sandbox paths covered by an empty read-only tmpfs, so that
	// e.g. the run directory inside the workspace is not visible; HideHost
	// are the same paths on the host, which Landlock leaves out instead.
	Hide     []string
	HideHost []string
	// Helper is the harness binary, which confines itself with Landlock
	// when started with HelperArg (the landlock backend needs it).
	Helper  string
	Timeout time.Duration
	Limits  Limits
	// Stdin is what the script reads (nil: nothing).
	Stdin []byte
	// Egress is the host path of an egress proxy's Unix socket: the
	// script then runs with a network namespace whose only way out is
	// that proxy (bwrap only; the other sandboxes refuse it).
	Egress string
	// LimitExec confines what the script may execute to its runtime (and
	// the runtime's ELF interpreter) and Exec: a Landlock layer that
	// handles only the execute right, inside bwrap as under the Landlock
	// backend. The script then sees of the system only those programs,
	// what they load and what its runtime reads (execview.go); it cannot
	// make an executable anonymous file (sandboxFilter), and under bwrap
	// every mount but the view's is noexec.
	LimitExec bool
	// Exec are binary names looked up on Path, or absolute host paths:
	// a program, or a directory whose every program may run.
	Exec []string
	// ExecTemp lets the script also run what it writes in the call's
	// private temporary directory (a toolchain's test binaries): that
	// directory stays out of the noexec mounts and in the execute layer.
	ExecTemp bool
}

// Result is what an execution did.
type Result struct {
	Backend   Backend
	Argv      []string // the command as executed on the host (sandbox wrapper included)
	ExitCode  int      // -1 when killed by a signal
	Signal    string
	TimedOut  bool
	Duration  time.Duration
	Stdout    []byte
	Stderr    []byte
	StdoutLen int64 // bytes written, kept or not
	StderrLen int64
	Truncated bool
	// ProcessLimit says what capped the number of processes: a pids
	// cgroup, or RLIMIT_NPROC (which does not bind root).
	ProcessLimit string
	ForkRefusals int // forks the pids cgroup refused
	// MemoryLimit says what capped memory: memory-cgroup or rss-watchdog.
	// MemoryExceeded is set when the cap killed the script.
	MemoryLimit    string
	MemoryExceeded bool
	// RunAs is the host identity the script ran as: "caller", or
	// "uid:65534" when harness is root and dropped to the sandbox user.
	RunAs string
}

// ErrUnavailable is returned when no sandbox backend can start.
var ErrUnavailable = errors.New("no sandbox backend works on this machine")

// Probe finds the backend to use: auto tries bwrap, then Landlock
// through helper (the harness binary); none is only ever returned when
// asked for by name.
func Probe(ctx context.Context, want Backend, helper string) (Backend, error) {
	switch want {
	case BackendNone:
		return BackendNone, nil
	case BackendBwrap:
		if err := probeBwrap(ctx); err != nil {
			return "", fmt.Errorf("%w: bwrap: %v", ErrUnavailable, err)
		}
		return BackendBwrap, nil
	case BackendLandlock:
		if err := probeLandlock(helper); err != nil {
			return "", fmt.Errorf("%w: landlock: %v", ErrUnavailable, err)
		}
		return BackendLandlock, nil
	case BackendAuto, "":
		berr := probeBwrap(ctx)
		if berr == nil {
			return BackendBwrap, nil
		}
		lerr := probeLandlock(helper)
		if lerr == nil {
			return BackendLandlock, nil
		}
		return "", fmt.Errorf("%w: bwrap: %v; landlock: %v", ErrUnavailable, berr, lerr)
	}
	return "", fmt.Errorf("sandbox backend %q is not supported (use auto, bwrap, landlock or none)", want)
}

func execOutput(argv []string) (string, error) {
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	return string(out), err
}

// prepared is an execution made ready: the host command line with its
// sandbox wrapper, rlimits and cgroups, and what must be undone after it.
type prepared struct {
	backend Backend
	lim     Limits
	cmdline []string
	env     []string
	dir     string
	extra   []*os.File // inherited from fd 3 on: joins first
	joins   []*os.File // the tasks files of cg, for the gate (gate.go)
	cg      *callCgroups
	drop    bool
	// launch starts the process as the sandbox user from the launcher
	// thread (launcher.go).
	launch bool
	undo   []func()
}

func (p *prepared) cleanup() {
	for _, f := range slices.Backward(p.undo) {
		f()
	}
}

// prepare builds the command for spec under backend; the caller runs
// cleanup once the process is gone, on every path.
func prepare(backend Backend, spec Spec) (_ *prepared, err error) {
	p := &prepared{backend: backend, lim: spec.Limits.withDefaults()}
	defer func() {
		if err != nil {
			p.cleanup()
		}
	}()
	if len(spec.Argv) == 0 {
		return nil, errors.New("empty command")
	}
	// Process and memory limits that bind root too: per-call cgroups where
	// they can be made (the process joins them before anything else runs).
	if os.Geteuid() == 0 {
		p.cg = newCallCgroups(p.lim.Processes, p.lim.Memory)
		if p.cg != nil {
			p.undo = append(p.undo, p.cg.remove)
			if err := p.joinCgroups(); err != nil {
				return nil, err
			}
		}
	}
	bin, err := LookupProgram(spec.Argv[0], spec.Path)
	if err != nil {
		return nil, &Refusal{Code: "script_runtime_missing", Msg: fmt.Sprintf("runtime %s is not installed on this machine: %v", spec.Argv[0], err)}
	}
	p.drop = dropsPrivileges(backend)
	if p.drop {
		if reachableByOthers(bin) != nil {
			// A runtime under a private directory (a repository's tools
			// under /root, a temporary checkout): give the sandbox user
			// its own way to it.
			linked, cleanup, err := reachableCopy(bin)
			if err != nil {
				return nil, &Refusal{Code: "script_runtime_unreachable", Msg: fmt.Sprintf("scripts run as an unprivileged user (uid %d) when harness runs as root, and it cannot reach %s (%v); install the runtime where other users can run it (e.g. /usr/local/bin), or run harness as an ordinary user", sandboxUID, bin, err)}
			}
			p.undo = append(p.undo, cleanup)
			bin = linked
		}
		// Writable mounts are shown to the sandbox user as its own through
		// idmapped mounts; paths the script sees on the host move with them.
		spec.Mounts = slices.Clone(spec.Mounts)
		spec.HideHost = slices.Clone(spec.HideHost)
		for i, m := range spec.Mounts {
			// A narrowed workspace is idmapped even when no part of it is
			// writable: the sandbox user reaches its parts through the
			// mount point, not through the operator's private directories.
			if !m.writable() && m.Only == nil {
				continue
			}
			im, err := newIDMappedMount(m.Host)
			if err != nil {
				return nil, &Refusal{Code: "sandbox_unavailable", Msg: fmt.Sprintf("harness runs as root, so scripts run as an unprivileged user, which needs an idmapped mount of %s to write it: %v; nothing was run. Run harness as an ordinary user instead", m.Host, err)}
			}
			p.undo = append(p.undo, im.remove)
			spec.Cwd = rebase(spec.Cwd, m.Host, im.target)
			for k, h := range spec.HideHost {
				spec.HideHost[k] = rebase(h, m.Host, im.target)
			}
			spec.Mounts[i].Host = im.target
		}
	}
	inner := append([]string{bin}, spec.Argv[1:]...)
	var argv []string
	p.env = spec.Env
	if spec.Egress != "" && backend != BackendBwrap {
		return nil, &Refusal{Code: "network_needs_bwrap", Msg: fmt.Sprintf("this skill declares network hosts and the operator allowed some, which needs the bwrap sandbox (a network namespace whose only way out is harness's proxy); the %s backend cannot confine a network. Install bubblewrap, or do not pass --allow-network for this skill", backend)}
	}
	switch backend {
	case BackendBwrap:
		if argv, err = p.bwrapArgv(spec, bin, inner); err != nil {
			return nil, err
		}
	case BackendLandlock:
		if spec.Helper == "" {
			return nil, &Refusal{Code: "sandbox_unavailable", Msg: "the landlock backend needs the harness binary as its helper"}
		}
		tmp, err := MkdirReachable("harness-tmp-")
		if err != nil {
			return nil, err
		}
		p.undo = append(p.undo, func() { os.RemoveAll(tmp) })
		uid := -1
		if p.drop {
			uid = sandboxUID
			if err := os.Chown(tmp, sandboxUID, sandboxGID); err != nil {
				return nil, err
			}
		}
		if err := checkParts(spec.Mounts); err != nil {
			return nil, err
		}
		var view *execView
		if spec.LimitExec {
			view = viewFor(bin, spec.Exec, spec.Path, "")
		}
		h := landlockRules(spec, bin, tmp, view)
		h.uid = uid
		if view != nil {
			h.limitExec, h.exec = true, view.exec
			if spec.ExecTemp {
				h.exec = append(slices.Clone(h.exec), tmp)
			}
		}
		var env []string
		env, h.scriptGoRace, h.hasScriptGoRace = splitGoRace(spec.Env)
		env = slices.DeleteFunc(env, func(kv string) bool {
			return strings.HasPrefix(kv, "HOME=") || strings.HasPrefix(kv, "TMPDIR=")
		})
		p.env = append(env, "TMPDIR="+tmp, "HOME="+tmp)
		if v, ok := os.LookupEnv(goRace); ok {
			// The race detector's settings reach the helper of a
			// race-built harness (its tests), so that it ends as harness
			// does; the helper takes them out before the script starts.
			p.env = append(p.env, goRace+"="+v)
		}
		argv = h.args(spec.Helper, inner)
		p.dir = spec.Cwd
	case BackendNone:
		argv = inner
		p.dir = spec.Cwd
	default:
		return nil, fmt.Errorf("sandbox backend %q cannot run scripts", backend)
	}
	p.gateCommand(argv)
	return p, nil
}

// command makes the process of p, not yet started.
func (p *prepared) command(ctx context.Context) *exec.Cmd {
	cmd := exec.CommandContext(ctx, p.cmdline[0], p.cmdline[1:]...)
	cmd.Env = p.env
	cmd.Dir = p.dir
	cmd.ExtraFiles = p.extra
	// A new session: the script has no controlling terminal (it cannot
	// write to the operator's /dev/tty), and its session's process group
	// is what the timeout kills.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Cancel = func() error { p.killTree(cmd); return nil }
	cmd.WaitDelay = 2 * time.Second
	return cmd
}

// killTree ends everything the process started.
func (p *prepared) killTree(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	if p.backend == BackendLandlock {
		// The helper is the subreaper of the script's tree: told to
		// stop, it kills every descendant, setsid escapees included.
		// It is in the process group killed below, so it gets the time
		// to do so first: killed with it, it would leave them to init.
		syscall.Kill(cmd.Process.Pid, syscall.SIGTERM)
		awaitExit(cmd.Process.Pid, 2*time.Second)
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if p.cg != nil {
		p.cg.killAll() // children that left the process group
	}
}

// awaitExit waits until the process pid has exited (it need not be
// reaped), at most d.
func awaitExit(pid int, d time.Duration) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for end := time.Now().Add(d); time.Until(end) > 0; {
		if n, err := unix.Poll(fds, int(time.Until(end).Milliseconds())+1); n > 0 || err != nil && err != unix.EINTR {
			return
		}
	}
}

// watch starts the memory watchdog where no memory cgroup holds the call.
func (p *prepared) watch(cmd *exec.Cmd) *memoryWatchdog {
	if p.cg != nil && p.cg.memory != "" {
		return nil
	}
	var procs func() []int
	if p.cg != nil {
		procs = p.cg.procs
	}
	return watchMemory(cmd.Process.Pid, p.lim.Memory, procs, func() { p.killTree(cmd) })
}

// Run executes spec under backend.
func Run(ctx context.Context, backend Backend, spec Spec) (*Result, error) {
	p, err := prepare(backend, spec)
	if err != nil {
		return nil, err
	}
	defer p.cleanup()
	timeout := spec.Timeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := p.command(runCtx)
	cmd.Stdin = nil // the script's own stdin is empty unless the spec gives one
	if spec.Stdin != nil {
		cmd.Stdin = bytes.NewReader(spec.Stdin)
	}
	stdout := &capped{max: p.lim.OutputCap}
	stderr := &capped{max: p.lim.OutputCap}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	start := time.Now()
	if err := p.start(cmd); err != nil {
		return nil, fmt.Errorf("run %s: %w", filepath.Base(spec.Argv[0]), err)
	}
	wd := p.watch(cmd)
	err = cmd.Wait()
	if wd != nil {
		wd.halt()
	}
	res := &Result{
		Backend: backend, Argv: p.cmdline, Duration: time.Since(start),
		Stdout: stdout.buf, Stderr: stderr.buf, StdoutLen: stdout.n, StderrLen: stderr.n,
		Truncated: stdout.n > int64(len(stdout.buf)) || stderr.n > int64(len(stderr.buf)),
		RunAs:     "caller",
	}
	if p.drop {
		res.RunAs = fmt.Sprintf("uid:%d", sandboxUID)
	}
	// Whatever is left of the tree dies now, even after a clean exit: a
	// daemonised child must not outlive its call.
	p.killTree(cmd)
	res.TimedOut = runCtx.Err() == context.DeadlineExceeded && ctx.Err() == nil
	res.ProcessLimit = "rlimit"
	if p.cg != nil && p.cg.pids != "" {
		res.ProcessLimit, res.ForkRefusals = "pids-cgroup", p.cg.forkRefusals()
	}
	if wd != nil {
		res.MemoryLimit, res.MemoryExceeded = "rss-watchdog", wd.exceeded.Load()
	} else {
		res.MemoryLimit, res.MemoryExceeded = "memory-cgroup", p.cg.oomKilled()
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		res.ExitCode = 0
	case errors.As(err, &ee):
		res.ExitCode = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.ExitCode, res.Signal = -1, ws.Signal().String()
		}
	case ctx.Err() != nil:
		return res, ctx.Err()
	case errors.Is(err, exec.ErrWaitDelay):
		res.ExitCode = 0
	default:
		return res, fmt.Errorf("run %s: %w", filepath.Base(spec.Argv[0]), err)
	}
	return res, nil
}

// capped keeps the first max bytes written and counts the rest.
type capped struct {
	max int
	buf []byte
	n   int64
}

func (c *capped) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	if room := c.max - len(c.buf); room > 0 {
		c.buf = append(c.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}
