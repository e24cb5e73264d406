package scripts

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Every sandboxed process starts as a small shell, the gate: it sets its
// own rlimits (the ulimit builtin), joins the call's cgroups and execs the
// sandbox. The limits and the cgroups therefore hold from the first
// instruction of the sandbox and for all its children, as if a prlimit
// program had run first, without the cost of starting one per call. The
// shell sets the limits itself because it may already be the sandbox
// user, whose limits harness could only set with CAP_SYS_RESOURCE, which
// root in a container often lacks; lowering one's own limits needs none.

// joinCgroups hands the gate the tasks file of each of the call's cgroups,
// opened here, as its first inherited descriptors (from 3: a POSIX shell's
// redirections take one digit): the shell may already be the sandbox
// user, who cannot open root's files for writing.
func (p *prepared) joinCgroups() error {
	for _, d := range p.cg.dirs() {
		f, err := os.OpenFile(d+"/tasks", os.O_WRONLY, 0)
		if err != nil {
			return fmt.Errorf("open the cgroup %s: %w", d, err)
		}
		p.joins = append(p.joins, f)
		p.extra = append(p.extra, f)
		p.undo = append(p.undo, func() { f.Close() })
	}
	return nil
}

// gateScript sets the limits of lim (hard and soft; a POSIX shell counts
// file sizes in blocks of 512 bytes, so a size is rounded down to one),
// then joins each cgroup whose tasks file it holds and closes that file,
// so nothing after inherits it, and execs the rest. withNproc adds
// RLIMIT_NPROC, the process limit where no pids cgroup holds the call (it
// counts every process of the user, across calls): bash names it -u, dash
// and busybox -p (bash's -p is the pipe size, which cannot be set).
//
// Writing 0 to a tasks file moves the calling thread (the shell has one):
// the one cgroup v1 move the kernel makes without write-locking every
// thread group, which waits for an RCU grace period (writing the pid to
// cgroup.procs took a median 11-14 ms per hierarchy on the reference
// machine, 0 to tasks 0.1 ms). Everything the shell starts afterwards is
// born in the cgroups.
func gateScript(lim Limits, withNproc bool, joins int) string {
	var b strings.Builder
	// dash's ulimit sets one limit a call.
	fmt.Fprintf(&b, "{ ulimit -t %d && ulimit -f %d && ulimit -n %d", lim.CPUSeconds, lim.FileSize/512, lim.OpenFiles)
	if withNproc {
		fmt.Fprintf(&b, " && { ulimit -u %[1]d 2>/dev/null || ulimit -p %[1]d; }", lim.Processes)
	}
	b.WriteString("; } || { echo 'harness: the sandbox cannot take its limits' >&2; exit 125; }")
	for i := range joins {
		fmt.Fprintf(&b, "; echo 0 >&%[1]d || exit 125; exec %[1]d>&-", 3+i)
	}
	b.WriteString(`; exec "$@"`)
	return b.String()
}

// gateCommand makes p's command line the gate shell around argv.
func (p *prepared) gateCommand(argv []string) {
	script := gateScript(p.lim, p.cg == nil || p.cg.pids == "", len(p.joins))
	p.cmdline = append([]string{"/bin/sh", "-c", script, "sh"}, argv...)
}

// start starts cmd, p's command.
func (p *prepared) start(cmd *exec.Cmd) error {
	var err error
	if p.launch {
		err = startAsSandboxUser(cmd)
	} else {
		err = cmd.Start()
	}
	// The child holds its own copies of the tasks files.
	for _, f := range p.joins {
		f.Close()
	}
	return err
}
