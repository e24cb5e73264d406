package scripts

// The Landlock helper's hold on the script: the tree it supervises and
// ends, and the file modes it records and restores.

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

type keptMode struct {
	path string
	mode uint32
}

// recordModes lists every entry under roots (links not followed) with its
// permission bits, parents before children, so that a restore reopens a
// directory before the entries in it. More than maxKeptModes fails: a
// mode left unrecorded could not be restored.
func recordModes(roots []string) ([]keptMode, error) {
	var out []keptMode
	var walk func(p string) error
	walk = func(p string) error {
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			if errors.Is(err, unix.ENOENT) {
				return nil
			}
			return fmt.Errorf("%s: %w", p, err)
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return nil // a link has no mode of its own
		}
		if len(out) >= maxKeptModes {
			return fmt.Errorf("more than %d entries under the read-only paths to record the modes of", maxKeptModes)
		}
		out = append(out, keptMode{p, st.Mode & 0o7777})
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return nil
		}
		d, err := os.Open(p)
		if errors.Is(err, unix.EACCES) {
			// The script, with the same credentials, cannot reach in either.
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		names, err := d.Readdirnames(-1)
		d.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		for _, n := range names {
			if err := walk(filepath.Join(p, n)); err != nil {
				return err
			}
		}
		return nil
	}
	for _, r := range roots {
		if err := walk(r); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// restoreModes sets back every recorded mode that changed and returns
// those paths. The entries cannot have been replaced (the script may only
// read them), and fchmodat does not follow a link at the last component
// only when told to, which kernels before fchmodat2 refuse; a link was
// never recorded, so following is safe here.
func restoreModes(kept []keptMode) []string {
	var changed []string
	for _, k := range kept {
		var st unix.Stat_t
		if err := unix.Lstat(k.path, &st); err != nil || st.Mode&unix.S_IFMT == unix.S_IFLNK {
			continue
		}
		if st.Mode&0o7777 != k.mode {
			unix.Fchmodat(unix.AT_FDCWD, k.path, k.mode, 0)
			changed = append(changed, k.path)
		}
	}
	return changed
}

// superviseTree runs argv as a child, as its subreaper, and returns its
// exit status once the child and every descendant are gone.
// after runs once the tree is gone; when it reports a finding, the
// helper fails with 126 whatever the child's status.
func superviseTree(argv []string, after func() bool) int {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "harness sandbox helper: subreaper: %v\n", err)
		return 126
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "harness sandbox helper: exec %s: %v\n", argv[0], err)
		return 127
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-done:
	case <-stop:
		killDescendants()
		werr = <-done
	}
	killDescendants()
	if after() {
		return 126
	}
	return passExit(werr)
}

// passExit ends a helper as its child ended: the same exit code, or the
// same signal (so harness sees what it would without a helper).
func passExit(werr error) int {
	var ee *exec.ExitError
	switch {
	case werr == nil:
		return 0
	case errors.As(werr, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			signal.Reset()
			syscall.Kill(os.Getpid(), ws.Signal())
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return 127
}

// killDescendants kills and reaps every child the helper has; as the
// subreaper it inherits each orphaned descendant, so it repeats until
// none is left.
func killDescendants() {
	for range 200 {
		kids := childrenOf(os.Getpid())
		if len(kids) == 0 {
			return
		}
		for _, k := range kids {
			syscall.Kill(k, syscall.SIGKILL)
		}
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func childrenOf(pid int) []int {
	var out []int
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, t := range tasks {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, t.Name()))
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}
