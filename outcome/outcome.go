// Package outcome is the vocabulary every layer uses to say how something
// ended: the exit codes of the CLI contract, the run statuses written to
// run.json, and Error, a refusal or failure with a stable code for machines
// and a sentence for people. Exit codes are decided from errors here and
// nowhere else.
package outcome

import (
	"context"
	"errors"
	"fmt"
)

// Exit codes: a contract with CI jobs. The README lists them and a
// testscript pins each one.
const (
	ExitOK          = 0
	ExitFailed      = 1 // the run failed
	ExitUsage       = 2 // usage or configuration error
	ExitLimit       = 3 // a limit was reached (resumable)
	ExitProvider    = 4 // model provider or infrastructure error (resumable)
	ExitPolicy      = 5 // refused by policy
	ExitApproval    = 6 // a tool call waits for a person's decision (resumable)
	ExitInterrupted = 130
)

// Run statuses in run.json.
const (
	StatusRunning     = "running"
	StatusSucceeded   = "succeeded"
	StatusFailed      = "failed"
	StatusLimit       = "limit-reached"
	StatusProvider    = "provider-error"
	StatusRefused     = "refused"
	StatusInterrupted = "interrupted"
	StatusApproval    = "awaiting_approval"
)

// Error is a refusal or failure with a stable code, a message that says
// what to do, and the exit code it means.
type Error struct {
	Code string
	Msg  string
	Exit int
	Err  error // the underlying cause, if any
	// Reported marks an error whose message the command already printed.
	Reported bool
}

func (e *Error) Error() string {
	if e.Err != nil && e.Msg == "" {
		return e.Err.Error()
	}
	return e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

// Usage is a mistake in how harness was called (exit 2).
func Usage(code, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...), Exit: ExitUsage}
}

// Policy is a refusal by policy (exit 5).
func Policy(code, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...), Exit: ExitPolicy}
}

// Failed is a failed run or command (exit 1).
func Failed(code, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...), Exit: ExitFailed}
}

// As returns err as an *Error: an interrupt is exit 130, anything else
// unknown is a failure (exit 1).
func As(err error) *Error {
	if err == nil {
		// No error is no refusal: a caller comparing codes sees "".
		return &Error{Msg: "no error", Exit: ExitOK}
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if errors.Is(err, context.Canceled) {
		return &Error{Code: "interrupted", Msg: err.Error(), Exit: ExitInterrupted, Err: err}
	}
	return &Error{Code: "internal_error", Msg: err.Error(), Exit: ExitFailed, Err: err}
}

// ExitCode is the process exit code err means (0 for nil).
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	return As(err).Exit
}

// Status is the run status an exit code records, and whether a run that
// ended so can be resumed.
func Status(exit int) (status string, resumable bool) {
	switch exit {
	case ExitOK:
		return StatusSucceeded, false
	case ExitLimit:
		return StatusLimit, true
	case ExitProvider:
		return StatusProvider, true
	case ExitInterrupted:
		return StatusInterrupted, true
	case ExitApproval:
		return StatusApproval, true
	case ExitUsage, ExitPolicy:
		return StatusRefused, false
	}
	return StatusFailed, false
}

// Record is how an error appears in run.json and the journal.
type Record struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}
