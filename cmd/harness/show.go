package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/harness-dev/harness/report"
)

func showCommand() *cli.Command {
	return &cli.Command{
		Name:      "show",
		Usage:     "summarize one run: prompt, model, skills, each turn's tool calls and decisions, usage, answer, how to resume",
		UsageText: "harness show RUN [--artifacts-dir DIR] [--json] [--allow-unverified]\n\nRUN is a run directory, or a run id under --artifacts-dir. The run is verified first, as\n`harness verify` does: one that does not verify is still shown, its first line saying what does\nnot verify, and the exit code is 5 unless --allow-unverified.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "artifacts-dir", Usage: "`DIR` where run ids are looked up", Value: ".harness/runs", Sources: cli.EnvVars("HARNESS_ARTIFACTS_DIR")},
			&cli.BoolFlag{Name: "json", Usage: "print the summary as JSON"},
			allowUnverifiedFlag(),
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.NArg() != 1 {
				return usagef("harness show takes exactly one RUN (a run directory or a run id)")
			}
			dir := cmd.Args().First()
			if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
				dir = filepath.Join(cmd.String("artifacts-dir"), cmd.Args().First())
			}
			v, err := report.Show(dir)
			if err != nil {
				return unreadableRun(dir, usagef(fmt.Sprintf("%s is neither a run directory nor a run id under %s", cmd.Args().First(), cmd.String("artifacts-dir"))))
			}
			v.Take(verdictOf(v.RunDir))
			var banner []string
			if !v.Verdict.OK {
				banner = []string{"run " + v.RunID + " does not verify: " + v.Verdict.Problem}
			}
			if cmd.Bool("json") {
				if err := writeJSONTo(cmd.Root().Writer, v); err != nil {
					return err
				}
			} else {
				report.WriteText(cmd.Root().Writer, v, time.Now())
			}
			return unverified(cmd, v.Verdict.OK, banner)
		},
	}
}
