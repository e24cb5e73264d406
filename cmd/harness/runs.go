package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/harness-dev/harness/internal/termsafe"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/report"
)

func runsCommand() *cli.Command {
	return &cli.Command{
		Name:      "runs",
		Usage:     "list past runs, newest first",
		UsageText: "harness runs [--artifacts-dir DIR] [--status STATUS] [--json]",
		Description: "One line per run: id, status, reason, exit code, turns, age, resumable, and whether its\n" +
			"directory verifies as `harness verify` checks it (yes, sealed, or no with the problem's code). A run whose\n" +
			"process died (SIGKILL, out of memory, power loss) shows as crashed: run.json still says\n" +
			"running but no process holds its lock; `harness resume` continues it.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "artifacts-dir", Usage: "`DIR` that holds run directories", Value: ".harness/runs", Sources: cli.EnvVars("HARNESS_ARTIFACTS_DIR")},
			&cli.StringFlag{Name: "status", Usage: "only runs with this `STATUS` (succeeded, failed, limit-reached, provider-error, refused, interrupted, awaiting_approval, running, crashed)"},
			&cli.BoolFlag{Name: "json", Usage: "print the list as JSON"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.NArg() > 0 {
				return usagef(fmt.Sprintf("unexpected argument %q: harness runs takes flags only (see harness runs --help)", cmd.Args().First()))
			}
			statuses := []string{outcome.StatusSucceeded, outcome.StatusFailed, outcome.StatusLimit, outcome.StatusProvider, outcome.StatusRefused,
				outcome.StatusInterrupted, outcome.StatusApproval, outcome.StatusRunning, report.StatusCrashed}
			if st := cmd.String("status"); st != "" && !slices.Contains(statuses, st) {
				return usagef(fmt.Sprintf("--status %q: give one of %s", st, strings.Join(statuses, ", ")))
			}
			all, err := report.List(cmd.String("artifacts-dir"))
			if err != nil {
				return usagef(fmt.Sprintf("--artifacts-dir %s: %v", cmd.String("artifacts-dir"), err))
			}
			list := []report.RunSummary{}
			for _, r := range all {
				if st := cmd.String("status"); st == "" || r.Status == st {
					r.Take(verdictOf(r.RunDir))
					list = append(list, r)
				}
			}
			w := cmd.Root().Writer
			if cmd.Bool("json") {
				return writeJSONTo(w, list)
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tSTATUS\tREASON\tEXIT\tTURNS\tAGE\tRESUMABLE\tVERIFIES")
			now := time.Now()
			for _, r := range list {
				exit := "-"
				if r.Ended() {
					exit = strconv.Itoa(r.ExitCode)
				}
				// A run directory is input: its id, status and reason are read
				// from files anyone who can write it chose.
				e := termsafe.Escape
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%v\t%s\n", e(r.RunID), e(r.Status), dash(e(r.Reason)), exit, r.Turns, report.Age(now, r.StartedAt), r.Resumable, e(verifiesWord(*r.Verdict)))
			}
			return tw.Flush()
		},
	}
}

// verifiesWord is the VERIFIES column: yes, sealed (a sealed run checked
// with its key), or no with the problem's code.
func verifiesWord(v report.Verdict) string {
	switch {
	case v.OK && v.SealChecked:
		return "sealed"
	case v.OK:
		return "yes"
	}
	code, _, _ := strings.Cut(v.Problem, ":")
	return "no (" + code + ")"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
