package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/eval"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/report"
)

// isEvalDir reports whether dir is an eval directory.
func isEvalDir(dir string) bool {
	st, err := os.Lstat(filepath.Join(dir, record.FileEval))
	return err == nil && st.Mode().IsRegular()
}

// verifyEval is `harness verify` of an eval directory.
func verifyEval(cmd *cli.Command, dir string) error {
	v, err := eval.Verify(dir, runKey())
	if err != nil {
		return err
	}
	w := cmd.Root().Writer
	if cmd.Bool("json") {
		if err := writeJSONTo(w, map[string]any{"dir": v.Dir, "kind": "eval", "ok": v.OK, "problems": nonNilStrings(v.Problems), "graded": len(v.Graded), "finished": v.Finished}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(w, "eval %s: %d of %d cells graded, finished: %v\n", v.Manifest.EvalID, len(v.Graded), len(v.Manifest.Cells), v.Finished)
		for _, p := range v.Problems {
			fmt.Fprintf(w, "problem: %s\n", p)
		}
		if v.OK {
			fmt.Fprintln(w, "ok: the eval journal, its gradings, the cells' batch and every run in it verify")
		}
	}
	if !v.OK {
		return reported(outcome.ExitPolicy, v.Problems[0])
	}
	return nil
}

// reportEval writes an eval directory's page: verified first, shown under
// a banner when it does not verify.
func reportEval(cmd *cli.Command, dir string) error {
	v, err := eval.Verify(dir, runKey())
	if err != nil {
		return err
	}
	if v.Result == nil {
		return usagef(fmt.Sprintf("%s has not finished: resume it first (harness eval resume %s)", dir, dir))
	}
	var gradings []record.EvalGrading
	for _, c := range v.Manifest.Cells {
		if _, ok := v.Graded[c.ID]; !ok {
			continue
		}
		data, err := artifacts.ReadBeneath(v.Dir, filepath.Join(record.DirEvalGrading, c.ID+".json"))
		if err != nil {
			continue
		}
		var g record.EvalGrading
		if artifacts.DecodeArtifact(data, record.TypeEvalGrading, record.EvalVersion, &g) == nil {
			gradings = append(gradings, g)
		}
	}
	verdict := report.Verdict{Checked: true, OK: v.OK}
	if !v.OK {
		verdict.Problem = v.Problems[0]
	}
	var b bytes.Buffer
	if err := report.EvalHTML(&b, v.Manifest, *v.Result, gradings, verdict, time.Now()); err != nil {
		return err
	}
	out := cmd.String("output")
	if out == "" {
		out = filepath.Clean(v.Dir) + ".report.html"
	}
	if err := artifacts.WriteFile(out, b.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintln(cmd.Root().Writer, out)
	return unverified(cmd, v.OK, v.Problems)
}

func nonNilStrings(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return xs
}
