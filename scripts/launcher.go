package scripts

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// When harness is root, a bwrap sandbox is started as the sandbox user
// with no capability in any set and no_new_privs set, before bwrap runs.
// Those are the credentials of the thread that starts it: a child gets
// its bounding, inheritable and ambient sets and no_new_privs from that
// thread, and its switch to the sandbox user (SysProcAttr.Credential,
// between fork and exec) empties the permitted, effective and ambient
// sets. So one OS thread of harness gives up its bounding, inheritable
// and ambient sets and sets no_new_privs once, and starts every such
// sandbox: what a setpriv program did on every call, without starting
// it (2-3 ms of CPU a call on the reference machine).
//
// The thread never ends and never runs anything else: its credentials
// cannot be restored, and bwrap --die-with-parent kills the sandbox when
// the thread that started it exits (the parent death signal follows the
// thread, not the process). Go creates new threads from a clean one when
// asked on a locked thread, so the credentials spread to no other thread.

// launchRequest is one process to start on the launcher thread.
type launchRequest struct {
	cmd  *exec.Cmd
	done chan error
}

// launcher returns the queue of the launcher thread, starting it on first
// use; an error means the thread could not give up its privileges, and
// nothing may be started through it.
var launcher = sync.OnceValues(func() (chan<- launchRequest, error) {
	reqs := make(chan launchRequest)
	ready := make(chan error)
	go launcherThread(reqs, ready)
	if err := <-ready; err != nil {
		return nil, err
	}
	return reqs, nil
})

func launcherThread(reqs <-chan launchRequest, ready chan<- error) {
	// Never unlocked: the goroutine keeps the thread for good.
	runtime.LockOSThread()
	if err := dropThreadPrivileges(); err != nil {
		ready <- err
		return // the thread ends with the goroutine, its credentials with it
	}
	ready <- nil
	for r := range reqs {
		r.done <- r.cmd.Start()
	}
}

// dropThreadPrivileges empties the calling thread's bounding, ambient and
// inheritable capability sets and sets no_new_privs, then reads them back
// from the kernel: a set left non-empty fails.
func dropThreadPrivileges() error {
	for c := 0; c <= unix.CAP_LAST_CAP; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && err != unix.EINVAL {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clear the ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var caps [2]unix.CapUserData
	if err := unix.Capget(&hdr, &caps[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	// Permitted and effective stay: the child needs CAP_SETUID and
	// CAP_SETGID to switch users, which then empties both.
	caps[0].Inheritable, caps[1].Inheritable = 0, 0
	if err := unix.Capset(&hdr, &caps[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	status, err := os.ReadFile("/proc/thread-self/status")
	if err != nil {
		return err
	}
	want := map[string]string{"CapInh": "0000000000000000", "CapBnd": "0000000000000000", "CapAmb": "0000000000000000", "NoNewPrivs": "1"}
	for _, line := range strings.Split(string(status), "\n") {
		k, v, _ := strings.Cut(line, ":")
		if w, ok := want[k]; ok {
			if strings.TrimSpace(v) != w {
				return fmt.Errorf("the launcher thread kept %s %s", k, strings.TrimSpace(v))
			}
			delete(want, k)
		}
	}
	if len(want) > 0 {
		return errors.New("the kernel does not report the launcher thread's capability sets")
	}
	return nil
}

// startAsSandboxUser starts cmd as the sandbox user from the launcher
// thread.
func startAsSandboxUser(cmd *exec.Cmd) error {
	reqs, err := launcher()
	if err != nil {
		return fmt.Errorf("start the sandbox without privileges: %w", err)
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Credential = &syscall.Credential{Uid: sandboxUID, Gid: sandboxGID, Groups: []uint32{}}
	done := make(chan error)
	reqs <- launchRequest{cmd: cmd, done: done}
	return <-done
}
