package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v3"

	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/pipeline"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/rundir"
)

func verifyCommand() *cli.Command {
	return &cli.Command{
		Name:      "verify",
		Usage:     "check a run, pipeline or batch directory without resuming it: journal chain, seal, inputs, identity, referenced files",
		UsageText: "harness verify DIR [--json]",
		Description: "Checks what resume checks before it trusts a run directory: the journal is one unbroken\n" +
			"hash chain from its first line, run.json's inputs and identity are the ones the journal\n" +
			"recorded, a segment that ended ends the journal, and every tool output and the skill\n" +
			"snapshot are the files harness wrote. Every delegate_task child the journal names is\n" +
			"verified the same way and must be the run the parent recorded. A directory sealed with\n" +
			"HARNESS_RUN_KEY is checked against that key and fails without it. A pipeline or batch\n" +
			"directory is checked as a whole: its own journal (chain, seal), each unit's run directory\n" +
			"as above (found beneath DIR, wherever DIR was copied or moved, and the run the journal\n" +
			"recorded), each result.json and answer file it recorded by digest, and its result file\n" +
			"against its journal. An eval directory: its journal, each grading by digest and against its\n" +
			"cell's run, and the cells' batch as above. Exit 0 when intact, 5 when not, 2 when DIR is none.",
		Flags: []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print the report as JSON"}},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.NArg() != 1 {
				return usagef("harness verify takes exactly one DIR: a run, pipeline or batch directory")
			}
			if isEvalDir(cmd.Args().First()) {
				return verifyEval(cmd, cmd.Args().First())
			}
			if isSetDir(cmd.Args().First()) {
				return verifySet(cmd)
			}
			rep, err := rundir.Verify(cmd.Args().First(), runKey())
			if err != nil {
				return err
			}
			w := cmd.Root().Writer
			if cmd.Bool("json") {
				if err := writeJSONTo(w, rep); err != nil {
					return err
				}
			} else {
				seal := "not sealed"
				switch {
				case rep.SealChecked:
					seal = "sealed, seal checked"
				case rep.Sealed:
					seal = "sealed, but HARNESS_RUN_KEY is not set"
				}
				fmt.Fprintf(w, "run %s (%s): %s\n", rep.RunID, rep.Status, seal)
				if rep.OK {
					fmt.Fprintf(w, "ok: %d journal lines chained to %s; %d tool outputs match their digests\n", rep.Lines, rep.Head, rep.ToolOutputs-rep.ToolOutputsInJournal)
					if n := rep.ToolOutputsInJournal; n > 0 {
						fmt.Fprintf(w, "%d tool outputs of the unfinished segment are only in the journal (the machine stopped before their files were synced); `harness resume` writes them again\n", n)
					}
				} else {
					fmt.Fprintf(w, "%s: %s\n", rep.Problem.Code, rep.Problem.Message)
				}
			}
			if !rep.OK {
				return reported(outcome.ExitPolicy, rep.Problem.Message)
			}
			return nil
		},
	}
}

// runKey is HARNESS_RUN_KEY, which seals run directories; empty = none.
func runKey() []byte {
	return []byte(os.Getenv("HARNESS_RUN_KEY"))
}

// isSetDir reports whether dir is a pipeline or batch directory.
func isSetDir(dir string) bool {
	for _, f := range []string{record.FilePipeline, record.FileBatch} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return true
		}
	}
	return false
}

// verifySet is harness verify of a pipeline or batch directory.
func verifySet(cmd *cli.Command) error {
	v, err := pipeline.Verify(cmd.Args().First(), runKey())
	if err != nil {
		return usagef(err.Error())
	}
	w := cmd.Root().Writer
	if cmd.Bool("json") {
		if err := writeJSONTo(w, v); err != nil {
			return err
		}
	} else {
		seal := "not sealed"
		switch {
		case v.SealChecked:
			seal = "sealed, seal checked"
		case v.Sealed:
			seal = "sealed, but the seal was not checked"
		}
		fmt.Fprintf(w, "%s %s: %s\n", v.Kind, v.ID, seal)
		for _, p := range v.Problems {
			fmt.Fprintf(w, "run_dir_tampered: %s\n", p)
		}
		for _, u := range v.Units {
			if u.OK {
				fmt.Fprintf(w, "ok: %s %s\n", u.Name, u.Status)
			} else {
				fmt.Fprintf(w, "run_dir_tampered: %s: %s\n", u.Name, u.Problem)
			}
		}
	}
	if !v.OK {
		return reported(outcome.ExitPolicy, v.Kind+" directory does not verify")
	}
	return nil
}
