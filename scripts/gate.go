package scripts

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// Every sandboxed process starts as a small shell that waits at a gate: a
// pipe it inherits. Before opening the gate harness sets the shell's
// rlimits (prlimit(2) on its pid) and the shell then joins the call's
// cgroups and execs the sandbox. The limits therefore hold from the first
// instruction of the script and for all its children, as if a prlimit
// program had run first, without the cost of starting one per call.

// gateScript reads one line from the gate (harness gone: EOF, exit 125),
// closes it so nothing after inherits it, joins each cgroup given and
// execs the rest. %[1]d is the gate's descriptor.
//
// The shell joins by writing 0 to the cgroup's tasks file: that moves
// the calling thread (the shell has one) and is the one cgroup v1 move
// the kernel makes without write-locking every thread group, which
// waits for an RCU grace period (writing the pid to cgroup.procs took a
// median 11-14 ms per hierarchy on the reference machine, 0 to tasks
// 0.1 ms). Everything the shell starts afterwards is born in the cgroup.
const gateScript = `read -r go <&%[1]d || exit 125; exec %[1]d<&-; n=$1; shift; while [ "$n" -gt 0 ]; do echo 0 > "$1/tasks" || exit 125; shift; n=$((n-1)); done; exec "$@"`

// gateCommand makes p's command line the gate shell around argv.
func (p *prepared) gateCommand(argv []string) error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	fd := 3 + len(p.extra)
	shell := "/bin/sh"
	if fd > 9 {
		// A POSIX shell's redirections take one digit; bash's take more
		// (a workspace with many read-only paths binds one descriptor
		// each).
		if _, err := os.Stat("/bin/bash"); err != nil {
			r.Close()
			w.Close()
			return errors.New("too many inherited files for the sandbox gate (more than 7 need /bin/bash)")
		}
		shell = "/bin/bash"
	}
	p.extra = append(p.extra, r)
	p.gate = w
	p.undo = append(p.undo, func() { r.Close(); w.Close() })
	var dirs []string
	if p.cg != nil {
		dirs = p.cg.dirs()
	}
	out := []string{shell, "-c", fmt.Sprintf(gateScript, fd), "sh", strconv.Itoa(len(dirs))}
	out = append(out, dirs...)
	p.cmdline = append(out, argv...)
	return nil
}

// start starts cmd (p's command), sets its rlimits and opens the gate.
func (p *prepared) start(cmd *exec.Cmd) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	// The parent's copy of the read end is not needed once the child
	// holds its own.
	p.extra[len(p.extra)-1].Close()
	if err := p.limit(cmd.Process.Pid); err != nil {
		p.gate.Close()
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		return fmt.Errorf("set the limits of the sandbox: %w", err)
	}
	_, err := p.gate.Write([]byte("go\n"))
	p.gate.Close()
	if err != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		return fmt.Errorf("open the sandbox gate: %w", err)
	}
	return nil
}

// limit sets the rlimits of the process at the gate. RLIMIT_NPROC counts
// every process of the user, across calls: it is the process limit only
// where no pids cgroup holds this call alone.
func (p *prepared) limit(pid int) error {
	limits := []struct {
		resource int
		value    uint64
	}{
		{unix.RLIMIT_CPU, p.lim.CPUSeconds},
		{unix.RLIMIT_FSIZE, p.lim.FileSize},
		{unix.RLIMIT_NOFILE, p.lim.OpenFiles},
	}
	if p.cg == nil || p.cg.pids == "" {
		limits = append(limits, struct {
			resource int
			value    uint64
		}{unix.RLIMIT_NPROC, p.lim.Processes})
	}
	for _, l := range limits {
		rl := unix.Rlimit{Cur: l.value, Max: l.value}
		if err := unix.Prlimit(pid, l.resource, &rl, nil); err != nil {
			return fmt.Errorf("prlimit %d: %w", l.resource, err)
		}
	}
	return nil
}
