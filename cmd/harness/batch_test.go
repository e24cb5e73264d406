package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/joshdk/go-junit"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/record"
)

// cmdBatchTasks writes a batch result's tasks as "id status exit" lines,
// in its order, so two results can be compared with cmp whatever their
// directories and timings:
//
//	batch-tasks .harness/batches/b/batch-result.json tasks.txt
func cmdBatchTasks(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: batch-tasks batch-result.json out.txt")
	}
	var r record.PipelineResult
	ts.Check(artifacts.ReadJSON(ts.MkAbs(args[0]), record.TypeBatchResult, record.BatchVersion, &r))
	var b strings.Builder
	for _, t := range r.Tasks {
		fmt.Fprintf(&b, "%s %s %d\n", t.Name, t.Status, t.ExitCode)
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(b.String()), 0o644))
}

// cmdJUnitParse reads a JUnit file with a JUnit parser this project did
// not write and prints "suite tests failures" and one "case status" line
// per test case:
//
//	junit-parse junit.xml
func cmdJUnitParse(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: junit-parse FILE")
	}
	suites, err := junit.IngestFile(ts.MkAbs(args[0]))
	ts.Check(err)
	for _, s := range suites {
		fmt.Fprintf(ts.Stdout(), "suite %s tests=%d failed=%d skipped=%d\n", s.Name, s.Totals.Tests, s.Totals.Failed, s.Totals.Skipped)
		for _, c := range s.Tests {
			msg := ""
			if c.Error != nil {
				msg = " " + strings.ReplaceAll(c.Error.Error(), "\n", " ")
			}
			fmt.Fprintf(ts.Stdout(), "case %s %s%s\n", c.Name, c.Status, msg)
		}
	}
}
