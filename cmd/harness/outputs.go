package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/resolve"
	"github.com/harness-dev/harness/run"
	"github.com/harness-dev/harness/runresult"
)

// The files a CI job reads after `harness run` or `harness resume`
// (--result-file, --output-last-message) always describe this invocation.

// outputTargets are --result-file and --output-last-message, absolute:
// recorded with the run, they must mean the same to a resume started
// elsewhere.
func outputTargets(resultFile, lastMessage string) (record.Outputs, error) {
	var o record.Outputs
	for _, t := range []struct {
		flag, path string
		dst        *string
	}{{"--result-file", resultFile, &o.ResultFile}, {"--output-last-message", lastMessage, &o.LastMessage}} {
		if t.path == "" {
			continue
		}
		abs, err := filepath.Abs(t.path)
		if err != nil {
			return o, usagef(fmt.Sprintf("%s %s: %v", t.flag, t.path, err))
		}
		*t.dst = abs
	}
	return o, nil
}

// deliver writes the files a CI step reads, atomically, at the end of
// every invocation: a copy of result.json and the final answer. An
// invocation that ended before any run began leaves a result.json saying
// so, and no answer: a job never reads an earlier run's files as this
// one's.
func deliver(cmd *cli.Command, res *run.Result, err error, outs record.Outputs) error {
	cmd.Root().Metadata[deliveredKey] = true
	switch {
	case res != nil && res.Record != nil:
		return writeDelivery(res.Record, outs, res.Workspace)
	case err != nil:
		return deliverAttempt(err, outs)
	}
	return nil
}

// writeDelivery writes rec and its answer where outs say, creating their
// directories (a CI step names a file in a directory it uploads). A
// target in the workspace (ws, "" when no run began) is written beneath
// it without following a link: the model may have made one there, and
// the answer would land, verbatim, wherever it points.
func writeDelivery(rec *record.Result, outs record.Outputs, ws string) error {
	for _, t := range []struct {
		flag, path string
		data       func() ([]byte, bool, error) // the bytes, or false to remove
	}{
		{"--result-file", outs.ResultFile, func() ([]byte, bool, error) {
			b, err := artifacts.EncodeJSON(rec)
			return b, true, err
		}},
		{"--output-last-message", outs.LastMessage, func() ([]byte, bool, error) {
			return []byte(rec.Answer), rec.Answer != "", nil
		}},
	} {
		if t.path == "" {
			continue
		}
		b, write, err := t.data()
		if err != nil {
			return fmt.Errorf("%s: %w", t.flag, err)
		}
		if rel, ok := resolve.Beneath(t.path, ws); ok && ws != "" {
			err = writeBeneath(ws, rel, b, write)
			if errors.Is(err, artifacts.ErrOutsideDir) {
				return outcome.Policy("output_link_refused", "%s %s is in the workspace and its way goes through a symbolic link, which a model or a script may have made: harness writes there only through directories; name a path outside the workspace, or remove the link", t.flag, t.path)
			}
		} else {
			err = writeByPath(t.path, b, write)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", t.flag, err)
		}
	}
	return nil
}

// writeByPath writes (or, when !write, removes) path, making its
// directory.
func writeByPath(path string, b []byte, write bool) error {
	if !write {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("an earlier answer could not be removed: %w", err)
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("the directory of %s: %w", path, err)
	}
	return artifacts.WriteFile(path, b, 0o644)
}

// writeBeneath is writeByPath for rel inside dir, under
// artifacts.WriteBeneath's rules.
func writeBeneath(dir, rel string, b []byte, write bool) error {
	if !write {
		return artifacts.RemoveBeneath(dir, rel)
	}
	if err := artifacts.MkdirAllBeneath(dir, filepath.Dir(rel), 0o755); err != nil {
		return err
	}
	return artifacts.WriteBeneath(dir, rel, b, 0o644)
}

// deliveredKey marks, in the root command's metadata, that an action
// delivered the job's outputs; when a command line fails before any
// action runs, Main delivers them (see deliverUnparsed).
const deliveredKey = "harness.delivered"

// deliverUnparsed delivers the outputs of a `run`, `resume` or `continue` command line
// that failed before its action ran (an unknown flag, a bad value): the
// targets are read from the arguments as the command's own flags would
// parse them, then from HARNESS_RESULT_FILE and HARNESS_OUTPUT_LAST_MESSAGE
// for run.
func deliverUnparsed(args []string, err error) error {
	if len(args) < 2 || (args[1] != "run" && args[1] != "resume" && args[1] != "continue") {
		return nil
	}
	var sub *cli.Command
	for _, c := range newApp(nil, nil, nil).Commands {
		if c.Name == args[1] {
			sub = c
		}
	}
	takesValue := func(name string) bool {
		for _, f := range sub.Flags {
			if slices.Contains(f.Names(), name) {
				_, isBool := f.(*cli.BoolFlag)
				return !isBool
			}
		}
		return false
	}
	found := targetsIn(args[2:], takesValue)
	if args[1] == "run" {
		for _, n := range []string{"result-file", "output-last-message"} {
			if _, ok := found[n]; !ok {
				found[n] = os.Getenv(envName(n))
			}
		}
	}
	if args[1] == "continue" {
		// The run's last answer stands when a follow-up is refused.
		found["output-last-message"] = ""
	}
	outs, terr := outputTargets(found["result-file"], found["output-last-message"])
	if terr != nil {
		return terr
	}
	return deliverAttempt(err, outs)
}

// targetsIn reads --result-file and --output-last-message from a command
// line as its flags would parse it: the value of a flag that takes one is
// skipped, so a prompt that reads "--result-file" is not taken for it.
func targetsIn(rest []string, takesValue func(string) bool) map[string]string {
	found := map[string]string{}
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, val, inline := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !inline && takesValue(name) && i+1 < len(rest) {
			i++
			val = rest[i]
		}
		if name == "result-file" || name == "output-last-message" {
			found[name] = val
		}
	}
	return found
}

// deliverAttempt is deliver for an invocation that ran nothing.
func deliverAttempt(err error, outs record.Outputs) error {
	return writeDelivery(runresult.Attempt(err), outs, "")
}

// holdsRunResult says whether the result file at path is a result record
// of the run in runDir. Anything it cannot read as one is not: the
// refusal is written over it as over any other file.
func holdsRunResult(path, runDir string) bool {
	if path == "" || runDir == "" {
		return false
	}
	// Judged by the descriptor: a FIFO there is not waited on.
	b, err := artifacts.ReadRegular(path, 16<<20)
	if err != nil {
		return false
	}
	var res record.Result
	if err := json.Unmarshal(b, &res); err != nil || res.Type != record.TypeResult || res.RunDir == "" {
		return false
	}
	dir, err := filepath.Abs(runDir)
	if err != nil {
		return false
	}
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	held := filepath.Clean(res.RunDir)
	if d, err := filepath.EvalSymlinks(held); err == nil {
		held = d
	}
	return held == dir
}
