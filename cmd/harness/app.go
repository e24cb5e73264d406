package main

import (
	"context"
	"fmt"
	"io"
	"reflect"
	"runtime/debug"
	"strings"

	"github.com/harness-dev/harness/outcome"
	"github.com/urfave/cli/v3"
)

// version is what harness says it is, recorded in every run.json (a
// resume by another version is drift): -ldflags "-X main.version=..." when
// given, else the module version `go install ...@VERSION` built, else the
// VCS revision of a build from a clone (with -dirty for uncommitted
// changes).
var version = buildVersion(ldflagVersion)

// ldflagVersion is set at build time with -ldflags "-X main.ldflagVersion=...".
var ldflagVersion string

const devVersion = "0.1.0-dev"

func buildVersion(ldflag string) string {
	bi, _ := debug.ReadBuildInfo()
	return versionFrom(bi, ldflag)
}

func versionFrom(bi *debug.BuildInfo, ldflag string) string {
	if ldflag != "" {
		return ldflag
	}
	if bi == nil {
		return devVersion
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return devVersion
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	v := devVersion + "+" + rev
	if dirty {
		v += "-dirty"
	}
	return v
}

func newApp(stdin io.Reader, stdout, stderr io.Writer) *cli.Command {
	app := &cli.Command{
		Name:    "harness",
		Usage:   "run LLM agents in batch, reproducibly, with Agent Skills",
		Version: version,
		Description: "harness runs a prompt loop against an OpenAI-compatible model with skills " +
			"preloaded from a workspace, executes tools in a sandbox, and leaves a run directory " +
			"(journal, skill registry, activations, policy) that a reviewer or a later run can trust.\n\n" +
			"Exit codes: 0 success, 1 run failed, 2 usage or configuration error, 3 limit reached " +
			"(resumable), 4 model provider error (resumable), 5 refused by policy, 6 a tool call awaits a person's\n" +
			"approval (resumable: harness approvals, harness resume --approve), 130 interrupted.",
		Metadata:              map[string]any{},
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
			reflectCommand(),
			resumeCommand(),
			continueCommand(),
			verifyCommand(),
			runsCommand(),
			approvalsCommand(),
			showCommand(),
			reportCommand(),
			skillsCommand(),
			pipelineCommand(),
			batchCommand(),
			scheduleCommand(),
		},
	}
	strictUsage(app)
	oneDefault(app)
	return app
}

// oneDefault hides the flag library's own "(default: ...)" where a flag's
// usage already says its default, or where the value it would show is a
// zero that means "none" (0s, 0): help shows each flag's default once.
func oneDefault(c *cli.Command) {
	for _, f := range c.Flags {
		v := reflect.ValueOf(f)
		if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
			continue
		}
		e := v.Elem()
		usage, hide := e.FieldByName("Usage"), e.FieldByName("HideDefault")
		value := e.FieldByName("Value")
		if !usage.IsValid() || !hide.IsValid() || !hide.CanSet() {
			continue
		}
		if strings.Contains(usage.String(), "default") || value.IsValid() && value.IsZero() {
			hide.SetBool(true)
		}
	}
	for _, sub := range c.Commands {
		oneDefault(sub)
	}
}

// strictUsage makes every mistake in a command line a one-line usage
// error (exit 2): an unknown flag or a malformed value, on any command,
// and an unknown command, which the library would otherwise answer with a
// help search and exit 1.
func strictUsage(cmd *cli.Command) {
	cmd.OnUsageError = func(ctx context.Context, c *cli.Command, err error, isSubcommand bool) error {
		msg := strings.TrimPrefix(err.Error(), "flag provided but not defined: -")
		if msg != err.Error() {
			given := strings.TrimLeft(msg, "-")
			msg = "unknown flag --" + given
			if near := strings.TrimLeft(cli.SuggestFlag(c.Flags, given, true), "-"); near != "" && outcome.EditDistance(near, given) <= max(1, len(given)/3) {
				msg += "; did you mean --" + near + "?"
			}
		}
		return usagef(fmt.Sprintf("%s: %s (see %s --help)", c.FullName(), msg, c.FullName()))
	}
	if len(cmd.Commands) > 0 && cmd.Action == nil {
		cmd.Action = func(ctx context.Context, c *cli.Command) error {
			if c.NArg() > 0 {
				return usagef(fmt.Sprintf("unknown command %q for %s (see %s --help)", c.Args().First(), c.FullName(), c.FullName()))
			}
			return cli.ShowSubcommandHelp(c)
		}
	}
	for _, sub := range cmd.Commands {
		strictUsage(sub)
	}
}
