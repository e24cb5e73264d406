package main

import (
	"errors"

	"github.com/harness-dev/harness/outcome"
)

// usagef is a mistake in how harness was called: fix the command line.
func usagef(msg string) error {
	return &outcome.Error{Code: "usage", Msg: msg, Exit: outcome.ExitUsage}
}

// reported carries an exit code for a command that already printed its
// report, for example `skills validate` finding errors (exit 1).
func reported(code int, msg string) error {
	return &outcome.Error{Code: "reported", Msg: msg, Exit: code, Reported: true}
}

func isReported(err error) bool {
	var e *outcome.Error
	return errors.As(err, &e) && e.Reported
}
