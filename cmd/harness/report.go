package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/report"
)

func reportCommand() *cli.Command {
	return &cli.Command{
		Name:      "report",
		Usage:     "write a self-contained HTML report of a run, a pipeline or a batch",
		UsageText: "harness report DIR [-o FILE] [--open]",
		Description: "DIR is a run directory, a pipeline directory or a batch directory. The report is one HTML\n" +
			"file with its styles inline and no script, so it opens from a CI artifact or file:// with\n" +
			"no network. By default it is written beside DIR, as DIR.report.html (never inside a\n" +
			"directory a tool could write); every text from the model or a tool is escaped.\n" +
			"Every run shown is verified first, as `harness verify` does: one that does not verify is\n" +
			"still shown, under a banner naming what does not verify, and the exit code is 5 unless\n" +
			"--allow-unverified.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write the report to `FILE`"},
			&cli.BoolFlag{Name: "open", Usage: "open the report with xdg-open afterwards"},
			allowUnverifiedFlag(),
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.NArg() != 1 {
				return usagef("harness report needs exactly one DIR: a run, pipeline or batch directory")
			}
			dir, err := filepath.Abs(cmd.Args().First())
			if err != nil {
				return usagef(err.Error())
			}
			if st, err := os.Stat(dir); err != nil || !st.IsDir() {
				return usagef(fmt.Sprintf("%s is not a directory", cmd.Args().First()))
			}
			page, err := report.Report(dir, time.Now())
			if err != nil {
				return usagef(err.Error())
			}
			verified := page.Judge(judgeFor(dir))
			var b bytes.Buffer
			if err := report.WriteHTML(&b, page); err != nil {
				return err
			}
			out := cmd.String("output")
			if out == "" {
				out = filepath.Clean(dir) + ".report.html"
			}
			if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
				return err
			}
			if err := artifacts.WriteFile(out, b.Bytes(), 0o644); err != nil {
				return err
			}
			fmt.Fprintln(cmd.Root().Writer, out)
			if cmd.Bool("open") {
				if err := exec.Command("xdg-open", out).Start(); err != nil {
					fmt.Fprintf(cmd.Root().ErrWriter, "harness: could not open the report (%v); it is at %s\n", err, out)
				}
			}
			return unverified(cmd, verified, page.Banner)
		},
	}
}
