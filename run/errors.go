package run

import (
	"errors"
	"fmt"
)

// Exit codes, as documented in ARCHITECTURE.md. They are decided here,
// from the kind of error, and nowhere else.
const (
	ExitOK          = 0
	ExitFailed      = 1
	ExitUsage       = 2
	ExitLimit       = 3
	ExitProvider    = 4
	ExitPolicy      = 5
	ExitInterrupted = 130
)

// Error is a refusal or failure of a run with a stable code for machines,
// a message for people that says what to do, and the exit code it means.
type Error struct {
	Code string
	Msg  string
	Exit int
	Err  error // the underlying cause, if any
}

func (e *Error) Error() string {
	if e.Err != nil && e.Msg == "" {
		return e.Err.Error()
	}
	return e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

// ExitCode is the process exit code this error means.
func (e *Error) ExitCode() int { return e.Exit }

func usageErr(code, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...), Exit: ExitUsage}
}

func policyErr(code, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...), Exit: ExitPolicy}
}

// AsError returns err as a *Error, wrapping unknown errors as a failed run.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: "internal_error", Msg: err.Error(), Exit: ExitFailed, Err: err}
}

// ErrorRecord is how an error appears in run.json and the journal.
type ErrorRecord struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}
