// Command harness runs LLM agents in batch, reproducibly, with Agent Skills.
//
// This package only maps flags to options structs and errors to exit codes;
// the work happens in run, skills and the packages below them.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"github.com/harness-dev/harness/internal/startheap"
	"github.com/harness-dev/harness/internal/termsafe"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/scripts"
)

func main() {
	os.Exit(Main(os.Args, os.Stdin, os.Stdout, os.Stderr))
}

// closeInheritedOnExec marks every descriptor above stderr close-on-exec.
// harness opens its own that way; what it inherited without the flag (a
// make jobserver pipe, a CI agent's socket, a file the operator's shell
// holds open) would otherwise pass through every process it starts into
// the sandbox, where Landlock and bwrap do not mediate open descriptors.
// What harness passes on purpose it hands over explicitly (ExtraFiles).
func closeInheritedOnExec() {
	if unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC) == nil {
		return
	}
	// Kernels before 5.11 have no CLOSE_RANGE_CLOEXEC.
	entries, _ := os.ReadDir("/proc/self/fd")
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC)
		}
	}
}

// Main runs the harness CLI with the given arguments and streams and returns
// the process exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return mainWith(args, stdin, stdout, stderr, nil)
}

// mainWith is Main with an observer that sees every journal line once it
// is durable; the tests use it to stop the process at an exact event.
func mainWith(args []string, stdin io.Reader, stdout, stderr io.Writer, observe func(line []byte, depth int)) int {
	// The harness binary doubles as the sandbox's helpers: the Landlock
	// helper (confines itself, runs the script) and the network forwarder.
	if scripts.IsHelper(args) {
		// Long-lived and small: garbage would only pile up.
		startheap.Release()
	}
	if code, ok := scripts.HelperDispatch(args); ok {
		return code
	}
	closeInheritedOnExec()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Everything a command prints on stdout can quote a model, a skill, an
	// index or a file name: no control character of theirs reaches the
	// terminal or the CI log as itself (result files keep the bytes).
	width := terminalWidth(stdout)
	safe := termsafe.NewWriter(stdout)
	defer safe.Flush()
	stdout = safe
	app := newApp(stdin, stdout, stderr)
	app.Metadata[helpWidthKey] = width
	if observe != nil {
		app.Metadata[observerKey] = observe
	}
	err := app.Run(ctx, args)
	if err != nil && app.Metadata[deliveredKey] == nil {
		if derr := deliverUnparsed(args, err); derr != nil {
			fmt.Fprintf(stderr, "harness: %s\n", continued(derr.Error()))
		}
	}
	code := outcome.ExitCode(err)
	if err != nil && !isReported(err) {
		// An error can quote a model, a skill or a provider.
		fmt.Fprintf(stderr, "harness: %s\n", continued(err.Error()))
	}
	return code
}

// terminalWidth is the width of the terminal w is, else the width help
// keeps to in a file, a pipe or a CI log.
func terminalWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 {
			return cols
		}
	}
	return defaultHelpWidth
}

// continued is an error message for stderr: controls escaped, and every
// line after the first indented, so a message that quotes a model or a
// provider (a refusal, an error body) cannot print a line that reads as
// harness's own ("harness: run r1 succeeded").
func continued(msg string) string {
	return strings.ReplaceAll(termsafe.Lines(msg), "\n", "\n  ")
}
