package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/pipeline"
	"github.com/harness-dev/harness/report"
	"github.com/harness-dev/harness/run"
)

// Every reader of a run directory (show, report, runs, approvals) checks
// it with the one verifier `harness verify` uses before it shows it.

func allowUnverifiedFlag() cli.Flag {
	return &cli.BoolFlag{Name: "allow-unverified", Usage: "show what does not verify, under its banner, and exit 0 (default: exit 5)"}
}

// verdictOf verifies one run directory, with HARNESS_RUN_KEY when set.
func verdictOf(dir string) report.Verdict {
	rep, err := run.Verify(dir, runKey())
	if err != nil {
		return report.Verdict{Checked: true, Problem: outcome.As(err).Error()}
	}
	v := report.Verdict{Checked: true, OK: rep.OK, Sealed: rep.Sealed, SealChecked: rep.SealChecked}
	if rep.Problem != nil {
		v.Problem = rep.Problem.Code + ": " + rep.Problem.Message
	}
	return v
}

// ownProblems are what does not verify of a pipeline or batch directory
// itself and of what it recorded of its units (none for a run directory;
// the units' runs are judged one by one).
func ownProblems(dir string) []string {
	if !isSetDir(dir) {
		return nil
	}
	v, err := pipeline.Verify(dir, runKey())
	if err != nil {
		return []string{err.Error()}
	}
	out := append([]string{}, v.Problems...)
	for _, u := range v.Units {
		if !u.OK {
			out = append(out, v.Kind+" "+u.Name+": "+u.Problem)
		}
	}
	return out
}

// unverified ends a reader's command: the banner on stderr too, and exit 5
// unless the operator allows what does not verify.
func unverified(cmd *cli.Command, ok bool, banner []string) error {
	if ok {
		return nil
	}
	for _, b := range banner {
		fmt.Fprintf(cmd.Root().ErrWriter, "harness: %s\n", b)
	}
	if cmd.Bool("allow-unverified") {
		return nil
	}
	fmt.Fprintln(cmd.Root().ErrWriter, "harness: shown anyway under a banner; exit 5 (pass --allow-unverified to exit 0)")
	return &outcome.Error{Code: "run_dir_tampered", Exit: outcome.ExitPolicy, Reported: true, Msg: strings.Join(banner, "; ")}
}
