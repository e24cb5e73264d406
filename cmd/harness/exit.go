package main

import (
	"context"
	"errors"
)

// Exit codes are a contract with CI jobs; ARCHITECTURE.md lists them and a
// testscript pins each one.
const (
	exitOK          = 0
	exitFailed      = 1
	exitUsage       = 2
	exitLimit       = 3
	exitProvider    = 4
	exitPolicy      = 5
	exitInterrupted = 130
)

// exitCoder is implemented by errors that know which exit code they mean
// (run.Error, usage errors). Everything else is a failed run.
type exitCoder interface{ ExitCode() int }

// reporter marks errors whose message was already shown to the user (for
// example a run that printed its own summary), so Main does not print it twice.
type reporter interface{ Reported() bool }

func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var ec exitCoder
	if errors.As(err, &ec) {
		return ec.ExitCode()
	}
	if errors.Is(err, context.Canceled) {
		return exitInterrupted
	}
	return exitFailed
}

func isReported(err error) bool {
	var r reporter
	return errors.As(err, &r) && r.Reported()
}

// usageError is a mistake in how harness was called: fix the command line.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }
func (e *usageError) ExitCode() int { return exitUsage }

func usagef(msg string) error { return &usageError{msg: msg} }

// codeError carries an explicit exit code with an already printed report,
// for example `skills validate` finding errors (exit 1).
type codeError struct {
	code int
	msg  string
}

func (e *codeError) Error() string  { return e.msg }
func (e *codeError) ExitCode() int  { return e.code }
func (e *codeError) Reported() bool { return true }
