package main

import (
	"context"
	"io"

	"github.com/urfave/cli/v3"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

func newApp(stdin io.Reader, stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:    "harness",
		Usage:   "run LLM agents in batch, reproducibly, with Agent Skills",
		Version: version,
		Description: "harness runs a prompt loop against an OpenAI-compatible model with skills " +
			"preloaded from a workspace, executes tools in a sandbox, and leaves a run directory " +
			"(journal, skill registry, activations, policy) that a reviewer or a later run can trust.\n\n" +
			"Exit codes: 0 success, 1 run failed, 2 usage or configuration error, 3 limit reached " +
			"(resumable), 4 model provider error (resumable), 5 refused by policy, 130 interrupted.",
		Reader:                stdin,
		Writer:                stdout,
		ErrWriter:             stderr,
		HideHelpCommand:       true,
		Suggest:               true,
		EnableShellCompletion: false,
		OnUsageError: func(ctx context.Context, cmd *cli.Command, err error, isSubcommand bool) error {
			return usagef(err.Error())
		},
		// Errors are printed once, by Main, with an exit code chosen there.
		ExitErrHandler: func(context.Context, *cli.Command, error) {},
		Commands: []*cli.Command{
			runCommand(),
			resumeCommand(),
			verifyCommand(),
			skillsCommand(),
		},
	}
}
