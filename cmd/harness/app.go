package main

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/harness-dev/harness/outcome"
	"github.com/urfave/cli/v3"
)

// version is what harness says it is, recorded in every run.json (a
// resume by another version is drift): -ldflags "-X main.ldflagVersion=..."
// when given, else the module version `go install ...@VERSION` built, else
// the VCS revision of a build from a clone (with -dirty for uncommitted
// changes), stamped by `go tool task build` (.ci/version-ldflags) or
// recorded by the go command.
var version = buildVersion(stamp{ldflagVersion, ldflagRevision, ldflagModified})

// Set at build time by .ci/version-ldflags: the version (a tag on the
// commit), the commit, and whether the tree had uncommitted changes. The
// go command records the last two itself unless -buildvcs=false, which
// some environments set in GOFLAGS.
var ldflagVersion, ldflagRevision, ldflagModified string

const devVersion = "0.1.0-dev"

// stamp is what the linker was told (-X), each "" when it was not.
type stamp struct{ version, revision, modified string }

func buildVersion(s stamp) string {
	bi, _ := debug.ReadBuildInfo()
	return versionFrom(bi, s)
}

func versionFrom(bi *debug.BuildInfo, st stamp) string {
	if st.version != "" {
		return st.version
	}
	if bi != nil {
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			return v
		}
	}
	rev, dirty := st.revision, st.modified == "true"
	if rev == "" && bi != nil {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
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
			evalCommand(),
			scheduleCommand(),
		},
	}
	strictUsage(app)
	return app
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
		if m := invalidValue.FindStringSubmatch(msg); m != nil {
			msg = badValue(c, m[2], m[1], m[3])
		}
		return usagef(fmt.Sprintf("%s: %s (see %s --help)", c.FullName(), msg, c.FullName()))
	}
	if len(cmd.Commands) > 0 && cmd.Action == nil {
		cmd.Action = func(ctx context.Context, c *cli.Command) error {
			if c.NArg() > 0 {
				given := c.Args().First()
				msg := fmt.Sprintf("unknown command %q for %s", given, c.FullName())
				if near := nearCommand(c, given); near != "" {
					msg += "; did you mean " + c.FullName() + " " + near + "?"
				}
				return usagef(fmt.Sprintf("%s (see %s --help)", msg, c.FullName()))
			}
			return cli.ShowSubcommandHelp(c)
		}
	}
	for _, sub := range cmd.Commands {
		strictUsage(sub)
	}
}

// nearCommand is the subcommand of c whose name is nearest to given, if
// it is near enough to be what was meant; "" otherwise.
func nearCommand(c *cli.Command, given string) string {
	var names []string
	primary := map[string]string{}
	for _, sub := range c.VisibleCommands() {
		for _, name := range sub.Names() {
			names = append(names, name)
			primary[name] = sub.Name
		}
	}
	return primary[outcome.Nearest(given, names)]
}

// invalidValue is the flag library's message for a value its flag cannot
// parse: the value, the flag, and the parser's own words.
var invalidValue = regexp.MustCompile(`^invalid value "(.*)" for flag -+([^:]+): (.*)$`)

// badValue says what a valid value of flag name is, in place of the
// parser's message (strconv.ParseInt: parsing "abc": invalid syntax).
func badValue(c *cli.Command, name, value, why string) string {
	var want string
	for _, f := range c.Flags {
		if !slices.Contains(f.Names(), name) {
			continue
		}
		switch f.(type) {
		case *cli.IntFlag, *cli.Int64Flag:
			want = "give a whole number, such as 10"
		case *cli.UintFlag:
			want = "give a whole number of 0 or more, such as 10"
		case *cli.FloatFlag:
			want = "give a number, such as 0.5"
		case *cli.DurationFlag:
			want = "give a duration with its unit, such as 90s, 10m or 1h30m"
		case *cli.BoolFlag:
			want = "give true or false, or leave the value out"
		}
		if strings.Contains(why, "out of range") {
			want = "too large; " + want
		}
	}
	if want == "" {
		want = why
	}
	return fmt.Sprintf("--%s %q: %s", name, value, want)
}
