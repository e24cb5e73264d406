package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/pipeline"
	"github.com/harness-dev/harness/report"
	"github.com/harness-dev/harness/rundir"
)

// Every reader of a run directory (show, report, runs, approvals) checks
// it with the one verifier `harness verify` uses before it shows it.

func allowUnverifiedFlag() cli.Flag {
	return &cli.BoolFlag{Name: "allow-unverified", Usage: "show what does not verify, under its banner, and exit 0 (without it: exit 5)"}
}

// unreadableRun is the error for a run directory a reader could not
// read: a linked run.json is tampering (exit 5) in the verifier's words,
// anything else the usage error the command gives.
func unreadableRun(dir string, usage error) error {
	if _, err := rundir.ReadManifest(dir); err != nil && outcome.As(err).Code == "run_dir_tampered" {
		return err
	}
	return usage
}

// verdictOf verifies one run directory, with HARNESS_RUN_KEY when set.
func verdictOf(dir string) report.Verdict {
	rep, err := rundir.Verify(dir, runKey())
	if err != nil {
		return report.Verdict{Checked: true, Problem: outcome.As(err).Error()}
	}
	return verdictFrom(rep)
}

// verdictFrom is a run verifier's report as a reader shows it.
func verdictFrom(rep *rundir.Report) report.Verdict {
	v := report.Verdict{Checked: true, OK: rep.OK, Sealed: rep.Sealed, SealChecked: rep.SealChecked, JournalTurns: rep.Turns, JournalUsage: rep.Usage}
	if rep.Problem != nil {
		v.Problem = rep.Problem.Code + ": " + rep.Problem.Message
	}
	return v
}

// judgeFor is how a reader judges what it shows of dir: a verdict per run
// directory, and what does not verify of a pipeline or batch directory
// itself and of what it recorded of its units. A set is verified once:
// its units' run verdicts come from that pass, and a unit whose run does
// not verify is told by that run's own verdict, not twice.
//
// set is the set's verification (nil: dir is a run directory).
func judgeFor(dir string) (verify func(string) report.Verdict, own []string, set *pipeline.Verification) {
	if !isSetDir(dir) {
		return verdictOf, nil, nil
	}
	v, err := pipeline.Verify(dir, runKey())
	if err != nil {
		return verdictOf, []string{err.Error()}, nil
	}
	known := map[string]report.Verdict{}
	own = append(own, v.Problems...)
	for _, u := range v.Units {
		if u.Run != nil {
			known[u.RunDir] = verdictFrom(u.Run)
		}
		if !u.OK && (u.Run == nil || u.Run.OK) {
			own = append(own, v.Kind+" "+u.Name+": "+u.Problem)
		}
	}
	return func(d string) report.Verdict {
		if k, ok := known[d]; ok {
			return k
		}
		return verdictOf(d)
	}, own, v
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
