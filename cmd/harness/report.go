package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/report"
)

func reportCommand() *cli.Command {
	return &cli.Command{
		Name:      "report",
		Usage:     "write a self-contained HTML report of a run, a pipeline, a batch or an eval",
		UsageText: "harness report DIR [-o FILE] [--open]",
		Description: "DIR is a run, pipeline, batch or eval directory. The report is one HTML\n" +
			"file with its styles inline and no script, so it opens from a CI artifact or file:// with\n" +
			"no network. By default it is written beside DIR, as DIR.report.html (never inside a\n" +
			"directory a tool could write); every text from the model or a tool is escaped. A batch's\n" +
			"report is an index of its tasks, each linking to its own page in DIR.report.files/.\n" +
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
			if isEvalDir(dir) {
				return reportEval(cmd, dir)
			}
			page, err := report.Report(dir, time.Now())
			if err != nil {
				return unreadableRun(dir, usagef(err.Error()))
			}
			verify, own, set := judgeFor(dir)
			if set != nil && set.Recomputed != nil && page.Set != nil {
				// The result file is not what the journal gives: the page
				// shows the journal's, under the banner that says so.
				page.Set.TakeJournal(set.Recomputed)
			}
			verified := page.Judge(verify, own)
			out := cmd.String("output")
			if out == "" {
				out = filepath.Clean(dir) + ".report.html"
			}
			if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
				return err
			}
			// A batch is an index and a page per task beside it, in
			// <report>.files/: one page of a thousand runs would not open.
			files := strings.TrimSuffix(filepath.Base(out), ".html") + ".files"
			if parts := page.SplitBatch(files, filepath.Base(out)); len(parts) > 0 {
				if err := os.MkdirAll(filepath.Join(filepath.Dir(out), files), 0o755); err != nil {
					return err
				}
				for _, pf := range parts {
					if err := writePage(filepath.Join(filepath.Dir(out), files, pf.Name), pf.Page); err != nil {
						return err
					}
				}
			}
			if err := writePage(out, page); err != nil {
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

// writePage renders one report page to path, atomically.
func writePage(path string, p *report.Page) error {
	var b bytes.Buffer
	if err := report.WriteHTML(&b, p); err != nil {
		return err
	}
	return artifacts.WriteFile(path, b.Bytes(), 0o644)
}
