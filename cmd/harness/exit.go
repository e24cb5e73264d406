package main

import (
	"errors"
	"fmt"

	"github.com/harness-dev/harness/artifacts"
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

// Bounds on files an operator names that harness reads whole: a prompt,
// and the small configuration files (--config, --output-schema).
const (
	maxPromptBytes  = 16 << 20
	maxOperatorFile = 1 << 20
)

// readFlagFile reads the file given to --flag, at most max bytes; what it
// cannot read is a usage error that names the flag. A pipe is read as a
// file (--prompt-file <(command)).
func readFlagFile(flag, path string, max int64) ([]byte, error) {
	b, err := artifacts.ReadFileAtMost(path, max)
	if err != nil {
		return nil, flagFileError(flag, path, max, err)
	}
	return b, nil
}

func flagFileError(flag, path string, max int64, err error) error {
	var tl *artifacts.TooLargeError
	if errors.As(err, &tl) {
		return usagef(fmt.Sprintf("--%s %s: larger than %d MiB, the most harness reads for it", flag, path, max>>20))
	}
	return usagef(fmt.Sprintf("--%s %s: %v", flag, path, err))
}
