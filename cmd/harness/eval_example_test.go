package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harness-dev/harness/record"
)

// replayEvalExample runs one skill of examples/eval from its cassettes, as
// run-eval.sh does, and returns the result.
func replayEvalExample(t *testing.T, skill string, extra ...string) record.EvalResult {
	t.Helper()
	ex, err := filepath.Abs("../../examples/eval")
	if err != nil {
		t.Fatal(err)
	}
	dirs := t.TempDir()
	args := append([]string{"harness", "eval", filepath.Join(ex, "skills", skill), "--model", "scripted", "--grader-model", "scripted-grader",
		"--epochs", "3", "--jobs", "2", "--quiet", "--replay", filepath.Join(ex, "cassettes", skill), "--artifacts-dir", dirs, "--id", skill}, extra...)
	var stdout, stderr bytes.Buffer
	if code := Main(args, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("eval of %s exited %d:\n%s\n%s\nThe cassettes are stale if a request changed: run examples/eval/record.sh", skill, code, stdout.String(), stderr.String())
	}
	b, err := os.ReadFile(filepath.Join(dirs, skill, record.FileEvalResult))
	if err != nil {
		t.Fatal(err)
	}
	var res record.EvalResult
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	return res
}

func passRate(t *testing.T, res record.EvalResult, config string) record.Stat {
	t.Helper()
	for _, s := range res.Summaries {
		if s.Configuration == config {
			return s.PassRate
		}
	}
	t.Fatalf("no summary for %s in %+v", config, res.Summaries)
	return record.Stat{}
}

// TestEvalExampleReplays replays examples/eval (go tool task demo:eval)
// offline: every cell and every grading comes from the cassettes recorded
// against a scripted model. It fails when a change to what harness sends
// makes them stale, and holds the numbers the README and the example's
// scripts describe.
func TestEvalExampleReplays(t *testing.T) {
	t.Run("commit-message helps", func(t *testing.T) {
		res := replayEvalExample(t, "commit-message", "--min-delta", "0.3")
		with, without := passRate(t, res, record.ConfigWithSkill), passRate(t, res, record.ConfigWithoutSkill)
		if with.N != 6 || without.N != 6 || with.Mean-without.Mean < 0.5 {
			t.Errorf("with_skill %+v, without_skill %+v: want 6 cells each and a delta of at least 0.5", with, without)
		}
		if res.Gate == nil || !res.Gate.Met || res.Cells["graded"] != 24 {
			t.Errorf("gate %+v, cells %v: want the gate met and 24 cells graded", res.Gate, res.Cells)
		}
		if len(res.NonDiscriminating) != 0 {
			t.Errorf("not discriminating: %+v", res.NonDiscriminating)
		}
		if len(res.Triggers) != 1 || res.Triggers[0].N != 12 || res.Triggers[0].TruePositives != 5 || res.Triggers[0].FalseNegatives != 1 || res.Triggers[0].TrueNegatives != 6 {
			t.Errorf("triggers %+v: want 12 queries, one should-trigger query missed once", res.Triggers)
		}
		if res.GraderUsage.TotalTokens == 0 {
			t.Error("the grader's usage is zero: were the expectations graded from its cassettes?")
		}
	})
	t.Run("json-answers does not", func(t *testing.T) {
		res := replayEvalExample(t, "json-answers")
		if len(res.Deltas) != 1 || res.Deltas[0].PassRate != 0 {
			t.Errorf("deltas %+v: want 0", res.Deltas)
		}
		if len(res.NonDiscriminating) != 3 {
			t.Errorf("not discriminating: %+v, want both checks and the expectation", res.NonDiscriminating)
		}
		for _, n := range res.NonDiscriminating {
			if n.Always != record.GradePassed {
				t.Errorf("%+v: want passed in every configuration", n)
			}
		}
	})
}
