package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v3"

	"github.com/harness-dev/harness/internal/termsafe"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/report"
	"github.com/harness-dev/harness/rundir"
)

// approvalRow is one waiting call in `harness approvals`.
type approvalRow struct {
	RunID     string `json:"runId"`
	RunDir    string `json:"runDir"`
	CallID    string `json:"callId"`
	Tool      string `json:"tool"`
	Skill     string `json:"skill,omitempty"`
	Arguments string `json:"arguments"`
	Why       string `json:"why"`
	// Child is the delegate_task child run directory the call waits in,
	// relative to RunDir (CallID is then CHILD_ID/CALL_ID, decided with
	// `harness resume RUN_DIR --approve CHILD_ID/CALL_ID`).
	Child string `json:"child,omitempty"`
	// Problem is why the run directory does not verify; its calls are
	// then not listed, since nothing in it can be trusted.
	Problem string `json:"problem,omitempty"`
}

func approvalsCommand() *cli.Command {
	return &cli.Command{
		Name:      "approvals",
		Usage:     "list tool calls waiting for a person's decision",
		UsageText: "harness approvals [DIR...] [--json]",
		Description: "DIR is a directory of runs (default: .harness/runs, or $HARNESS_ARTIFACTS_DIR) or one run\n" +
			"directory. Each run that stopped awaiting approval (exit 6), or whose resume was refused with calls\n" +
			"still waiting (drift), is verified as `harness verify`\n" +
			"does, and its waiting calls are listed from its journal: decide one with\n" +
			"`harness resume RUN_DIR --approve CALL_ID` or `--deny CALL_ID --reason TEXT`.\n" +
			"Exit 0, or 5 when a run directory does not verify (it is listed with the problem).",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print the list as JSON"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			dirs := cmd.Args().Slice()
			if len(dirs) == 0 {
				d := os.Getenv("HARNESS_ARTIFACTS_DIR")
				if d == "" {
					d = ".harness/runs"
				}
				dirs = []string{d}
			}
			rows := []approvalRow{}
			bad := 0
			for _, dir := range dirs {
				runs, err := runDirsUnder(dir)
				if err != nil {
					return usagef(fmt.Sprintf("%s: %v", dir, err))
				}
				for _, rd := range runs {
					rep, err := rundir.Verify(rd, runKey())
					if err != nil {
						continue
					}
					if !rep.OK && rep.Status == outcome.StatusRefused && len(rep.Waiting) == 0 {
						continue
					}
					if !rep.OK {
						bad++
						rows = append(rows, approvalRow{RunID: rep.RunID, RunDir: rep.RunDir, Problem: rep.Problem.Code + ": " + rep.Problem.Message})
						continue
					}
					for _, w := range rep.Waiting {
						rows = append(rows, approvalRow{RunID: rep.RunID, RunDir: rep.RunDir, CallID: w.CallID, Tool: w.Tool, Skill: w.Skill, Arguments: w.Arguments, Why: w.Why, Child: w.Child})
					}
				}
			}
			w := cmd.Root().Writer
			if cmd.Bool("json") {
				if err := writeJSONTo(w, rows); err != nil {
					return err
				}
			} else if len(rows) == 0 {
				// A header over nothing reads as output that went missing.
				fmt.Fprintf(w, "no tool call waits for a decision in %s\n", strings.Join(dirs, ", "))
			} else {
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "RUN\tCALL\tTOOL\tSKILL\tWHY\tARGUMENTS")
				// Every cell but the header is words harness did not choose
				// (a model's call and arguments, a skill's name): escaped,
				// so that no row can rewrite another or hide what it asks.
				e := termsafe.Escape
				for _, r := range rows {
					if r.Problem != "" {
						fmt.Fprintf(tw, "%s\t-\t-\t-\tdoes not verify: %s\t-\n", e(r.RunID), e(r.Problem))
						continue
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", e(r.RunID), e(r.CallID), e(r.Tool), dash(e(r.Skill)), e(r.Why), shorten(e(r.Arguments), 80))
				}
				if err := tw.Flush(); err != nil {
					return err
				}
			}
			if bad > 0 {
				return &outcome.Error{Code: "run_dir_tampered", Msg: fmt.Sprintf("%d run directories do not verify; their calls are not listed", bad), Exit: outcome.ExitPolicy}
			}
			return nil
		},
	}
}

// runDirsUnder is dir itself when it is a run directory, else the run
// directories in it that may hold waiting calls, newest first.
func runDirsUnder(dir string) ([]string, error) {
	if _, err := os.Stat(filepath.Join(dir, "run.json")); err == nil {
		return []string{dir}, nil
	}
	list, err := report.List(dir)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no such directory")
	}
	var out []string
	for _, r := range list {
		// A resume refused (drift, approval_drift) leaves the run
		// refused with its calls still waiting in the journal: they are
		// listed until someone decides them.
		if r.Status == outcome.StatusApproval || r.Status == outcome.StatusRefused {
			out = append(out, r.RunDir)
		}
	}
	return out, nil
}
