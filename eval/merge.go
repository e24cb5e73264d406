package eval

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/scorecard"
)

// MergeOptions say which shard directories of one eval to merge, where,
// and the gate the merged numbers must meet.
type MergeOptions struct {
	Dirs []string
	Out  string
	Key  []byte
	Gate scorecard.GateOptions
}

// Merge reads the finished shards of one eval, each verified first, and
// writes the numbers of all their cells into Out as one machine would
// have: eval-result.json, benchmark.json, benchmark.md and junit.xml.
// Every cell must be graded in exactly one shard.
func Merge(o MergeOptions) (*record.EvalResult, error) {
	if len(o.Dirs) == 0 {
		return nil, outcome.Usage("eval_merge_invalid", "harness eval merge needs the shard directories")
	}
	if err := checkOut(o.Out, o.Dirs); err != nil {
		return nil, err
	}
	first, gradings, err := mergeShards(o.Dirs, o.Key)
	if err != nil {
		return nil, err
	}
	m := *first
	res := mergedResult(m, gradings, o.Out)
	var previous *record.EvalResult
	if f := o.Gate.NoRegressionFrom; f != "" {
		p, err := ReadResult(f, o.Key, m)
		if err != nil {
			return nil, err
		}
		previous = p
	}
	scorecard.ApplyGate(&res, o.Gate, previous)
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, outcome.Usage("eval_merge_invalid", "--out %s: %v", o.Out, err)
	}
	e := &evalRun{dir: o.Out, manifest: m}
	if err := e.writeResults(&res, gradings); err != nil {
		return nil, err
	}
	if err := artifacts.WriteJSON(filepath.Join(o.Out, record.FileEvalResult), &res); err != nil {
		return nil, err
	}
	return &res, gateError(&res)
}

// mergeShards reads finished shards of one eval, each verified first, and
// gives their manifest (without its shard) and every cell's grading.
func mergeShards(dirs []string, key []byte) (*record.EvalManifest, []record.EvalGrading, error) {
	var first *record.EvalManifest
	from := map[string]string{}
	var gradings []record.EvalGrading
	for _, d := range dirs {
		v, err := Verify(d, key)
		if err != nil {
			return nil, nil, err
		}
		if !v.OK {
			return nil, nil, outcome.Policy("eval_dir_tampered", "%s does not verify, so it is not merged: %s", d, v.Problems[0])
		}
		if !v.Finished {
			return nil, nil, outcome.Usage("eval_unfinished", "%s has not finished: resume it first (harness eval resume %s)", d, d)
		}
		m := v.Manifest
		if first == nil {
			first = &m
		} else if why := differs(*first, m); why != "" {
			return nil, nil, outcome.Usage("eval_merge_invalid", "%s is not a shard of the same eval as %s: %s", d, dirs[0], why)
		}
		for _, c := range m.Cells {
			dg, ok := v.Graded[c.ID]
			if !ok {
				continue
			}
			if other, dup := from[c.ID]; dup {
				return nil, nil, outcome.Usage("eval_merge_invalid", "cell %s is graded in both %s and %s: give each shard once", c.ID, other, d)
			}
			from[c.ID] = d
			var g record.EvalGrading
			if err := readDigested(v.Dir, filepath.Join(record.DirEvalGrading, c.ID+".json"), dg, record.TypeEvalGrading, &g); err != nil {
				return nil, nil, err
			}
			gradings = append(gradings, g)
		}
	}
	first.Shard = ""
	first.EvalID = shardSuffix.ReplaceAllString(first.EvalID, "")
	return first, gradings, nil
}

// mergedResult is the numbers of the shards' cells together.
func mergedResult(m record.EvalManifest, gradings []record.EvalGrading, dir string) record.EvalResult {
	res := scorecard.Summarize(m, gradings)
	res.Envelope = artifacts.NewEnvelope(record.TypeEvalResult, record.EvalVersion)
	res.EvalID, res.Skill, res.Dir = m.EvalID, m.Skill, dir
	res.Cells = map[string]int{"graded": len(gradings)}
	res.Status, res.ExitCode = scorecard.StatusPassed, 0
	if missing := len(m.Cells) - len(gradings); missing > 0 {
		res.Cells["not_run"] = missing
		res.Status, res.ExitCode = scorecard.StatusIncomplete, 4
		res.Message = fmt.Sprintf("%d of %d cells are graded in none of the shards given: merge every shard, each finished", missing, len(m.Cells))
	}
	return res
}

// differs says why two shards' manifests are not of one eval ("" when
// they are).
func differs(a, b record.EvalManifest) string {
	switch {
	case a.SkillDigest != b.SkillDigest:
		return "the skill differs"
	case a.EvalDigest != b.EvalDigest || a.TriggersDigest != b.TriggersDigest:
		return "the eval file differs"
	case a.BaselineDigest != b.BaselineDigest:
		return "the baseline differs"
	case !slices.Equal(a.Configurations, b.Configurations) || !slices.Equal(a.Models, b.Models) || a.Epochs != b.Epochs:
		return "the configurations, models or epochs differ"
	case a.GraderModel != b.GraderModel || a.GraderPromptDigest != b.GraderPromptDigest:
		return "the grader differs"
	case a.SettingsDigest != b.SettingsDigest:
		return "the cells' run settings or tools differ"
	case !slices.EqualFunc(a.Cells, b.Cells, func(x, y record.EvalCell) bool { return x.ID == y.ID }):
		return "the cells differ"
	case a.Shard == b.Shard && a.Shard != "":
		return "both are shard " + a.Shard
	}
	return ""
}

// gateError is the error an eval's exit code needs: nil when it passed.
func gateError(res *record.EvalResult) error {
	switch {
	case res.ExitCode == 0:
		return nil
	case res.Status == scorecard.StatusFailed:
		return &outcome.Error{Code: "eval_gate_missed", Msg: strings.Join(res.Gate.Missed, "; "), Exit: 1}
	default:
		return &outcome.Error{Code: "eval_incomplete", Msg: res.Message, Exit: res.ExitCode}
	}
}

var shardSuffix = regexp.MustCompile(`-shard-[0-9]+$`)

// checkOut refuses an --out that is, holds or lies inside a shard, or is
// an existing directory that is not empty: merging writes only new files.
func checkOut(out string, dirs []string) error {
	if out == "" {
		return outcome.Usage("eval_merge_invalid", "--out DIR is required")
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return outcome.Usage("eval_merge_invalid", "--out %s: %v", out, err)
	}
	real := abs
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		real = r
	}
	for _, d := range dirs {
		da, _ := filepath.Abs(d)
		if r, err := filepath.EvalSymlinks(da); err == nil {
			da = r
		}
		for _, pair := range [][2]string{{real, da}, {da, real}} {
			if rel, err := filepath.Rel(pair[0], pair[1]); err == nil && filepath.IsLocal(rel) || pair[0] == pair[1] {
				return outcome.Usage("eval_merge_invalid", "--out %s and the shard %s overlap: merge into a directory of its own", out, d)
			}
		}
	}
	if entries, err := os.ReadDir(abs); err == nil && len(entries) > 0 {
		return outcome.Usage("eval_merge_invalid", "--out %s is not empty: merge into a new directory", out)
	}
	return nil
}
