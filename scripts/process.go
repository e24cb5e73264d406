package scripts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
)

// Process is a long-lived sandboxed process (an MCP server) talking over
// its standard input and output.
type Process struct {
	Stdin  io.WriteCloser
	Stdout io.ReadCloser
	// Argv is the command as executed on the host, wrapper included.
	Argv []string
	// RunAs is as for Result.
	RunAs string

	p      *prepared
	cmd    *exec.Cmd
	wd     *memoryWatchdog
	stderr *capped
	done   chan struct{}
	err    error
	once   sync.Once
}

// Start runs spec under backend as a process that lives until Stop (or
// ctx's end). spec.Timeout is ignored: a server has no natural end.
func Start(ctx context.Context, backend Backend, spec Spec) (*Process, error) {
	p, err := prepare(backend, spec)
	if err != nil {
		return nil, err
	}
	cmd := p.command(ctx)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		p.cleanup()
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		p.cleanup()
		return nil, err
	}
	stderr := &capped{max: 64 << 10}
	cmd.Stderr = stderr
	if err := p.start(cmd); err != nil {
		p.cleanup()
		return nil, fmt.Errorf("start %s: %w", filepath.Base(spec.Argv[0]), err)
	}
	pr := &Process{Stdin: stdin, Stdout: stdout, Argv: p.cmdline, RunAs: "caller", p: p, cmd: cmd, stderr: stderr, done: make(chan struct{})}
	if p.drop {
		pr.RunAs = fmt.Sprintf("uid:%d", sandboxUID)
	}
	pr.wd = p.watch(cmd)
	go func() {
		pr.err = cmd.Wait()
		close(pr.done)
	}()
	return pr, nil
}

// Done is closed when the process has exited.
func (pr *Process) Done() <-chan struct{} { return pr.done }

// Stop kills the process and everything it started, waits for it, and
// removes what was set up for it. It is safe to call more than once.
func (pr *Process) Stop() {
	pr.once.Do(func() {
		pr.Stdin.Close()
		pr.p.killTree(pr.cmd)
		<-pr.done
		if pr.wd != nil {
			pr.wd.halt()
		}
		pr.p.cleanup()
	})
}

// Exit describes how the process ended (after Done): the exit code or
// signal, whether the memory cap killed it, and the end of its stderr.
func (pr *Process) Exit() (code int, signal string, memoryExceeded bool, stderr []byte) {
	var ee *exec.ExitError
	if errors.As(pr.err, &ee) {
		code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code, signal = -1, ws.Signal().String()
		}
	}
	if pr.wd != nil {
		memoryExceeded = pr.wd.exceeded.Load()
	} else if pr.p.cg != nil {
		memoryExceeded = pr.p.cg.oomKilled()
	}
	return code, signal, memoryExceeded, pr.stderr.buf
}
