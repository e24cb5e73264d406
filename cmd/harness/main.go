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
	"syscall"
)

func main() {
	os.Exit(Main(os.Args, os.Stdin, os.Stdout, os.Stderr))
}

// Main runs the harness CLI with the given arguments and streams and returns
// the process exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	app := newApp(stdin, stdout, stderr)
	err := app.Run(ctx, args)
	code := exitCode(err)
	if err != nil && !isReported(err) {
		fmt.Fprintf(stderr, "harness: %v\n", err)
	}
	return code
}
