package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/pipeline"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/scorecard"
)

// maxEvalJournal bounds the eval journal a reader takes in: a line per
// cell graded, and a few more.
const maxEvalJournal = 64 << 20

// Verification is how an eval directory verified: its journal (chain and
// seal), eval.json and the batch file held to the journal's start, every
// grading held to the digest its line recorded and to the run identity of
// its cell in the batch, the batch directory verified as `harness verify`
// does, and the result file held to the journal's end.
type Verification struct {
	Dir      string
	OK       bool
	Problems []string
	Manifest record.EvalManifest
	// Graded are the cells graded, with their grading's digest.
	Graded map[string]artifacts.Digest
	// Finished says the journal ends with eval.finished; Result is the
	// result file then.
	Finished bool
	Result   *record.EvalResult
	Batch    *pipeline.Verification
	// ended are the cells' workspace digests as their runs ended.
	ended map[string]artifacts.Digest
	// gradedRun is the run id and journal head each last grading was of.
	gradedRun map[string][2]string
	// next and head continue the journal (resume).
	next int64
	head artifacts.Digest
}

// Verify checks an eval directory without changing it. key is
// HARNESS_RUN_KEY: a sealed journal needs it.
func Verify(dir string, key []byte) (*Verification, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, outcome.Usage("eval_dir_invalid", "%s: %v", dir, err)
	}
	v := &Verification{Dir: abs, Graded: map[string]artifacts.Digest{}, gradedRun: map[string][2]string{}, ended: map[string]artifacts.Digest{}}
	mdata, err := artifacts.ReadBeneath(abs, record.FileEval)
	if err != nil {
		return nil, outcome.Usage("eval_dir_invalid", "%s is not an eval directory (%s: %v)", dir, record.FileEval, err)
	}
	if err := artifacts.DecodeArtifact(mdata, record.TypeEval, record.EvalVersion, &v.Manifest); err != nil {
		return nil, outcome.Usage("eval_dir_invalid", "%s: %s: %v", dir, record.FileEval, err)
	}
	fail := func(format string, args ...any) { v.Problems = append(v.Problems, fmt.Sprintf(format, args...)) }
	jdata, err := artifacts.ReadBeneath(abs, record.FileEvalJournal)
	if err != nil || len(jdata) > maxEvalJournal {
		fail("the eval journal cannot be read (%v)", err)
		return v, nil
	}
	c, err := artifacts.ReadJournal(bytes.NewReader(jdata))
	if err != nil {
		fail("the eval journal cannot be read: %v", err)
		return v, nil
	}
	if len(key) == 0 && len(c.Events) > 0 && artifacts.Sealed(c.Events[0].Raw) {
		fail("the eval journal is sealed: set HARNESS_RUN_KEY to the key it was written with to verify it")
		return v, nil
	}
	head, err := artifacts.VerifyChain(c.Events, key)
	if err != nil {
		fail("the eval journal fails its hash chain: %v", err)
		return v, nil
	}
	v.head, v.next = head, int64(len(c.Events))+1
	if len(c.Events) == 0 || c.Events[0].Type != record.EventEvalStarted {
		fail("the eval journal does not start with %s", record.EventEvalStarted)
		return v, nil
	}
	var started struct {
		ManifestDigest  artifacts.Digest `json:"manifestDigest"`
		BatchFileDigest artifacts.Digest `json:"batchFileDigest"`
	}
	_ = json.Unmarshal(c.Events[0].Data, &started)
	if artifacts.DigestBytes(mdata) != started.ManifestDigest {
		fail("%s is not the one the eval started with", record.FileEval)
	}
	if b, err := artifacts.ReadBeneath(abs, record.FileEvalBatch); err != nil || artifacts.DigestBytes(b) != started.BatchFileDigest {
		fail("%s is not the one the eval started with", record.FileEvalBatch)
	}
	batchDir := filepath.Join(abs, batchName(v.Manifest.Shard))
	units := map[string]pipeline.UnitVerification{}
	if _, err := os.Lstat(filepath.Join(batchDir, record.FileBatch)); err == nil {
		bv, err := pipeline.Verify(batchDir, key)
		if err != nil {
			fail("the cells' batch: %v", err)
		} else {
			v.Batch = bv
			if !bv.OK {
				why := slices.Clone(bv.Problems)
				for _, u := range bv.Units {
					if !u.OK && u.Problem != "" {
						why = append(why, u.Name+": "+u.Problem)
					}
				}
				fail("the cells' batch does not verify: %s", strings.Join(why, "; "))
			}
			for _, u := range bv.Units {
				units[u.Name] = u
			}
		}
	}
	var resultDigest artifacts.Digest
	for i, ev := range c.Events[1:] {
		switch ev.Type {
		case record.EventCellGraded:
			var g struct {
				Cell        string           `json:"cell"`
				Digest      artifacts.Digest `json:"digest"`
				RunID       string           `json:"runId"`
				JournalHead artifacts.Digest `json:"journalHead"`
			}
			if json.Unmarshal(ev.Data, &g) != nil || !cellIDPattern(g.Cell) {
				fail("eval journal line %d: a cell.graded that does not parse", i+2)
				continue
			}
			b, err := artifacts.ReadBeneath(abs, filepath.Join(record.DirEvalGrading, g.Cell+".json"))
			if err != nil || artifacts.DigestBytes(b) != g.Digest {
				fail("grading/%s.json is not the grading the eval journal recorded", g.Cell)
				continue
			}
			v.Graded[g.Cell], v.gradedRun[g.Cell] = g.Digest, [2]string{g.RunID, string(g.JournalHead)}
			v.Finished = false
		case record.EventCellEnded:
			var ce cellEnded
			if json.Unmarshal(ev.Data, &ce) != nil || !cellIDPattern(ce.Cell) {
				fail("eval journal line %d: a cell.ended that does not parse", i+2)
				continue
			}
			v.ended[ce.Cell] = ce.Workspace
		case record.EventEvalResumed:
			v.Finished = false
		case record.EventEvalFinished:
			var f struct {
				ResultDigest artifacts.Digest `json:"resultDigest"`
			}
			_ = json.Unmarshal(ev.Data, &f)
			resultDigest, v.Finished = f.ResultDigest, true
		default:
			fail("eval journal line %d: unknown event %q", i+2, ev.Type)
		}
	}
	// A cell's last grading is of the run the batch holds for it now (a
	// resume that ran the cell again grades it again).
	for cell, id := range v.gradedRun {
		if u, ok := units[cell]; !ok || u.Run == nil || u.Run.RunID != id[0] || string(u.Run.Head) != id[1] {
			if !v.Finished {
				// A resume grades it again.
				delete(v.Graded, cell)
				continue
			}
			fail("cell %s: its run in the batch is not the run that was graded", cell)
		}
	}
	if v.Finished {
		b, err := artifacts.ReadBeneath(abs, record.FileEvalResult)
		var r record.EvalResult
		switch {
		case err != nil || artifacts.DigestBytes(b) != resultDigest:
			fail("%s is not the result the eval journal recorded", record.FileEvalResult)
		case artifacts.DecodeArtifact(b, record.TypeEvalResult, record.EvalVersion, &r) != nil:
			fail("%s does not decode", record.FileEvalResult)
		default:
			v.Result = &r
			if why := v.resultAgrees(abs, r); why != "" {
				fail("%s does not agree with the gradings: %s", record.FileEvalResult, why)
			}
		}
	}
	v.OK = len(v.Problems) == 0
	return v, nil
}

var cellIDChars = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

func cellIDPattern(s string) bool {
	return len(s) <= 128 && filepath.IsLocal(s) && filepath.Base(s) == s && cellIDChars.MatchString(s)
}

// batchName is the cells' batch directory in an eval directory (the
// batch engine names a shard's as shardDir does).
func batchName(shard string) string {
	if name, err := shardDir(record.DirEvalBatch, shard); err == nil {
		return name
	}
	return record.DirEvalBatch
}

// ReadResult reads an earlier eval's result, for --no-regression-from:
// an eval directory, or its shards' directories separated as in PATH,
// each verified first: nothing is trusted because harness once wrote it.
// An eval that did not grade every cell is no baseline.
func ReadResult(path string, key []byte, of record.EvalManifest) (*record.EvalResult, error) {
	dirs := filepath.SplitList(path)
	var res *record.EvalResult
	var was record.EvalManifest
	if len(dirs) > 1 {
		m, gradings, err := mergeShards(dirs, key)
		if err != nil {
			return nil, err
		}
		r := mergedResult(*m, gradings, path)
		res, was = &r, *m
	} else {
		v, err := Verify(path, key)
		if err != nil {
			return nil, err
		}
		if !v.OK {
			return nil, outcome.Policy("eval_dir_tampered", "--no-regression-from %s does not verify: %s", path, v.Problems[0])
		}
		if v.Result == nil {
			return nil, outcome.Usage("eval_unfinished", "--no-regression-from %s has not finished: resume it first (harness eval resume %s)", path, path)
		}
		if v.Manifest.Shard != "" {
			return nil, outcome.Usage("eval_unfinished", "--no-regression-from %s is shard %s of an eval: give all its shards, separated by %q", path, v.Manifest.Shard, string(filepath.ListSeparator))
		}
		res, was = v.Result, v.Manifest
	}
	// The same evals, asked the same way: another skill's evals, or these
	// with other epochs, say nothing of a regression.
	// of.Skill is "" before the skill is read (the eval file need not
	// name it); the eval file's digest is known from the start.
	if was.EvalDigest != of.EvalDigest || (of.Skill != "" && was.Skill != of.Skill) {
		return nil, outcome.Usage("eval_baseline_invalid", "--no-regression-from %s is an eval of other evals (skill %s, eval file %s): compare with an eval of the same eval file", path, was.Skill, was.EvalDigest)
	}
	if res.Status == scorecard.StatusIncomplete {
		return nil, outcome.Usage("eval_unfinished", "--no-regression-from %s did not grade every cell (%s): resume it, or compare with a complete eval", path, res.Message)
	}
	return res, nil
}

// ResumeOptions configure a resume of an eval directory.
type ResumeOptions struct {
	Dir     string
	BaseURL string
	// Grader gives the grader for the recorded grader model (nil: none).
	Grader func(record.EvalManifest) GraderFactory
	// Commands gives command checks their rules from what the eval
	// recorded (nil: command checks fail, saying why).
	Commands func(record.EvalManifest) *CommandEnv
	Common   pipeline.Common
}

// Resume finishes an eval: the batch resumes (cells that ended are
// kept), and every cell not graded yet is graded.
func Resume(ctx context.Context, o ResumeOptions) (*record.EvalResult, error) {
	v, err := Verify(o.Dir, o.Common.RunKey)
	if err != nil {
		return nil, err
	}
	if !v.OK {
		return nil, outcome.Policy("eval_dir_tampered", "%s does not verify, so it is not resumed: %s", o.Dir, v.Problems[0])
	}
	m := v.Manifest
	suite, err := Load(LoadOptions{Path: orSkill(m), SkillDir: m.SkillDir, Triggers: m.TriggersFile})
	if err != nil {
		return nil, err
	}
	if suite.Digest != m.EvalDigest || suite.TriggersDigest != m.TriggersDigest {
		return nil, outcome.Usage("eval_drift", "the eval file changed since %s started: start a new eval", o.Dir)
	}
	e := &evalRun{dir: v.Dir, suite: suite, manifest: m, graded: v.Graded, gradedRun: v.gradedRun, ended: v.ended, now: o.Common.Now,
		opts: Options{BaseURL: o.BaseURL, Common: o.Common, Shard: m.Shard, AllowCommands: m.AllowCommands, CommandGrant: m.CommandGrant,
			Gate: scorecard.GateOptions{MinPassRate: m.Gate.MinPassRate, MinDelta: m.Gate.MinDelta, NoRegressionFrom: m.Gate.NoRegressionFrom}}}
	if o.Commands != nil {
		e.opts.Commands = o.Commands(m)
	}
	if e.now == nil {
		e.now = time.Now
	}
	suite.SkillName = m.Skill
	if o.Grader != nil {
		e.opts.Grader = o.Grader(m)
	}
	j, err := artifacts.OpenJournal(filepath.Join(v.Dir, record.FileEvalJournal), v.next)
	if err != nil {
		return nil, err
	}
	defer j.Close()
	j.SetClock(e.now)
	j.Continue(v.head, o.Common.RunKey)
	e.journal = j
	if _, err := j.Append(record.EventEvalResumed, map[string]any{"graded": len(v.Graded)}); err != nil {
		return nil, err
	}
	return e.execute(ctx, true)
}

func orSkill(m record.EvalManifest) string {
	if m.EvalFile != "" {
		return m.EvalFile
	}
	return m.SkillDir
}

// resultAgrees recomputes the numbers from the gradings the journal vouches
// for and holds the result file to them: a result written to say more than
// its gradings do is refused even where the journal is not sealed.
func (v *Verification) resultAgrees(dir string, r record.EvalResult) string {
	var gradings []record.EvalGrading
	for _, c := range v.Manifest.Cells {
		d, ok := v.Graded[c.ID]
		if !ok {
			continue
		}
		var g record.EvalGrading
		if err := readDigested(dir, filepath.Join(record.DirEvalGrading, c.ID+".json"), d, record.TypeEvalGrading, &g); err != nil {
			return err.Error()
		}
		gradings = append(gradings, g)
	}
	want := scorecard.Summarize(v.Manifest, gradings)
	for _, p := range []struct {
		name     string
		got, exp any
	}{{"summaries", r.Summaries, want.Summaries}, {"deltas", r.Deltas, want.Deltas}, {"per eval", r.PerEval, want.PerEval}, {"triggers", r.Triggers, want.Triggers}} {
		a, _ := json.Marshal(p.got)
		b, _ := json.Marshal(p.exp)
		if !bytes.Equal(a, b) {
			return "its " + p.name + " are not what the gradings give"
		}
	}
	return ""
}
