package pipeline

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/internal/junit"
	"github.com/harness-dev/harness/internal/mdtext"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
)

// JUnit XML, as CI systems read it: one testsuite, one testcase per task;
// a task that did not succeed is a failure carrying its reason, message
// and the start of its answer; a skipped or unstarted task is skipped.

var shardSuffix = regexp.MustCompile(`-shard-[0-9]+$`)

// maxExcerpt bounds the answer quoted in a report.
const maxExcerpt = 2000

// WriteJUnit writes a batch result as JUnit XML, atomically.
func WriteJUnit(path string, res *record.PipelineResult) error {
	suite := junit.Suite{Name: "harness.batch." + res.ID(), Time: seconds(res.DurationMs)}
	for _, t := range res.Tasks {
		c := junit.Case{Name: t.Name, Classname: "harness.batch", Time: seconds(t.DurationMs), SystemOut: runDirOf(res, t)}
		switch t.Status {
		case "succeeded":
		case statusSkipped, statusNotStarted:
			c.Skipped = &junit.Skipped{Message: t.Message}
			suite.Skipped++
		default:
			text := t.Message
			if a := answerOf(res, t); a != "" {
				text += "\n\nanswer:\n" + a
			}
			c.Failure = &junit.Failure{Message: fmt.Sprintf("%s (%s, exit %d)", t.Status, t.Reason, t.ExitCode), Type: t.Status, Text: clean(text)}
			suite.Failures++
		}
		suite.Cases = append(suite.Cases, c)
	}
	suite.Tests = len(suite.Cases)
	doc := junit.Suites{Name: suite.Name, Tests: suite.Tests, Failures: suite.Failures, Skipped: suite.Skipped, Time: suite.Time, Suites: []junit.Suite{suite}}
	b, err := junit.Encode(doc)
	if err != nil {
		return err
	}
	return artifacts.WriteFile(path, b, 0o644)
}

// WriteSummary writes a batch result as a Markdown table, atomically.
func WriteSummary(path string, res *record.PipelineResult) error {
	var b strings.Builder
	fmt.Fprintf(&b, "## harness batch %s: %s\n\n", mdtext.Inline(res.ID(), 200), mdtext.Inline(res.Status, 40))
	var counts []string
	for _, s := range []string{"succeeded", "failed", "limit", "provider_error", "refused", "interrupted", "awaiting_approval", statusSkipped, statusNotStarted} {
		if n := res.Counts[s]; n > 0 {
			counts = append(counts, fmt.Sprintf("%d %s", n, s))
		}
	}
	fmt.Fprintf(&b, "%d tasks: %s; %d tokens; %.1f s.\n\n", len(res.Tasks), strings.Join(counts, ", "), res.Usage.TotalTokens, float64(res.DurationMs)/1000)
	b.WriteString("| task | status | exit | tokens | answer | message |\n| --- | --- | --- | --- | --- | --- |\n")
	for _, t := range res.Tasks {
		msg := t.Message
		if line := pendingLine(t); line != "" {
			msg = line
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %s | %s |\n", mdtext.Inline(t.Name, 200), t.Status, t.ExitCode, t.Usage.TotalTokens, mdtext.Inline(answerOf(res, t), 120), mdtext.Inline(msg, 200))
	}
	return artifacts.WriteFile(path, []byte(b.String()), 0o644)
}

// runDirOf is where a task's run directory is: a batch result records it
// relative to the batch directory, a merged one where its shard was.
func runDirOf(res *record.PipelineResult, t record.PhaseOutcome) string {
	if t.RunDir == "" || filepath.IsAbs(t.RunDir) {
		return t.RunDir
	}
	return filepath.Join(res.Dir, t.RunDir)
}

// answerOf is the start of a task's answer, read back from its result.
func answerOf(res *record.PipelineResult, t record.PhaseOutcome) string {
	if t.RunDir == "" {
		return ""
	}
	var r record.Result
	if artifacts.ReadJSONBeneath(runDirOf(res, t), record.FileResult, record.TypeResult, 1, &r) != nil {
		return ""
	}
	a := r.Answer
	if len(a) > maxExcerpt {
		a = a[:maxExcerpt]
		for !utf8.ValidString(a) {
			a = a[:len(a)-1]
		}
		a += " ..."
	}
	return a
}

// clean drops what XML 1.0 cannot carry (control characters).
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' || r >= 0x20 && r != 0xFFFE && r != 0xFFFF {
			return r
		}
		return -1
	}, s)
}

func seconds(ms int64) string { return fmt.Sprintf("%.3f", float64(ms)/1000) }

// StatusUnverified marks a task of a shard that does not verify, merged
// only because the operator allowed it.
const StatusUnverified = "unverified"

// Merge joins the results of a batch's shards. Each shard directory is
// verified first (its journal, each task's run directory, what it
// recorded by digest) and each task's status is the one its verified run
// journal gives, never batch-result.json's word alone. A shard that does
// not verify is refused (exit 5, naming it) unless allowUnverified, which
// merges its tasks as unverified and never exits 0.
func Merge(dirs []string, key []byte, allowUnverified bool) (*record.PipelineResult, error) {
	var all []string
	var fileDigest artifacts.Digest
	byTask := map[string]record.PhaseOutcome{}
	out := &record.PipelineResult{Envelope: artifacts.NewEnvelope(record.TypeBatchResult, record.BatchVersion), Status: "succeeded", Counts: map[string]int{}}
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, err
		}
		var m record.PipelineManifest
		if err := artifacts.ReadJSONBeneath(abs, record.FileBatch, record.TypeBatch, record.BatchVersion, &m); err != nil {
			return nil, outcome.Usage("batch_dir_invalid", "%s is not a batch directory: %v", d, err)
		}
		if fileDigest == "" {
			fileDigest, all = m.FileDigest, m.AllTasks
			out.SetID("batch", shardSuffix.ReplaceAllString(m.ID(), ""))
		} else if m.FileDigest != fileDigest {
			return nil, outcome.Usage("batch_merge_mismatch", "%s ran another batch file (digest %s, not %s)", d, m.FileDigest, fileDigest)
		}
		// Verified first: a result file that is not what the shard wrote
		// is a refusal, not a missing result.
		v, err := Verify(abs, key)
		if err != nil {
			return nil, outcome.Usage("batch_dir_invalid", "%s: %v", d, err)
		}
		if !v.OK && !allowUnverified {
			return nil, outcome.Policy("shard_unverified", "shard %s does not verify: %s; nothing was merged (harness verify %s says more; --allow-unverified merges its tasks as unverified)", d, firstProblem(v), d)
		}
		var r record.PipelineResult
		if err := artifacts.ReadJSONBeneath(abs, record.FileBatchResult, record.TypeBatchResult, record.BatchVersion, &r); err != nil {
			return nil, outcome.Usage("batch_dir_invalid", "%s has no batch result (did it finish?): %v", d, err)
		}
		verified := map[string]UnitVerification{}
		for _, u := range v.Units {
			verified[u.Name] = u
		}
		for _, t := range r.Tasks {
			if _, dup := byTask[t.Name]; dup {
				return nil, outcome.Usage("batch_merge_mismatch", "task %s is in more than one shard (%s again)", t.Name, d)
			}
			u, ok := verified[t.Name]
			switch {
			case !v.OK && (!ok || !u.OK || len(v.Problems) > 0):
				t.Status, t.ExitCode = StatusUnverified, outcome.ExitPolicy
				t.Message = "shard " + d + " does not verify: " + firstProblem(v)
			case ok:
				t.Status, t.ExitCode = u.Status, u.ExitCode
			}
			if t.RunDir != "" && !filepath.IsAbs(t.RunDir) {
				// A merged result names runs of many shards: each where
				// its shard is now.
				t.RunDir = filepath.Join(abs, t.RunDir)
			}
			byTask[t.Name] = t
		}
		out.Shards = append(out.Shards, abs)
		out.DurationMs = max(out.DurationMs, r.DurationMs)
	}
	var missing []string
	for _, id := range all {
		t, ok := byTask[id]
		if !ok {
			missing = append(missing, id)
			continue
		}
		out.Tasks = append(out.Tasks, t)
		out.Counts[t.Status]++
		out.Usage.PromptTokens += t.Usage.PromptTokens
		out.Usage.CompletionTokens += t.Usage.CompletionTokens
		out.Usage.CachedTokens += t.Usage.CachedTokens
		out.Usage.ReasoningTokens += t.Usage.ReasoningTokens
		out.Usage.TotalTokens += t.Usage.TotalTokens
		out.Usage.Corrected = out.Usage.Corrected || t.Usage.Corrected
		out.UsageByModel = record.MergeByModel(out.UsageByModel, t.UsageByModel)
		if out.ExitCode == 0 && t.Status != "succeeded" && t.Status != statusSkipped {
			out.Status, out.ExitCode = t.Status, max(t.ExitCode, 1)
			out.Message = fmt.Sprintf("task %s: %s", t.Name, t.Message)
		}
	}
	out.Cost, out.Unpriced = record.CostOf(out.UsageByModel)
	if len(missing) > 0 {
		return nil, outcome.Usage("batch_merge_incomplete", "the shards given hold %d of %d tasks; missing: %s", len(all)-len(missing), len(all), strings.Join(firstN(missing, 10), ", "))
	}
	return out, nil
}

// firstProblem is the first thing of v that does not verify.
func firstProblem(v *Verification) string {
	if len(v.Problems) > 0 {
		return v.Problems[0]
	}
	for _, u := range v.Units {
		if !u.OK {
			return "task " + u.Name + ": " + u.Problem
		}
	}
	return "unknown"
}

func firstN(xs []string, n int) []string {
	if len(xs) > n {
		return append(xs[:n:n], fmt.Sprintf("... %d more", len(xs)-n))
	}
	return xs
}

// CheckMergeOut refuses a batch, pipeline or run directory as where a
// merged result goes: its own result would be replaced with one its
// journal never recorded.
func CheckMergeOut(dir string) error {
	for _, f := range []string{record.FileBatch, record.FilePipeline, record.FileManifest} {
		if _, err := os.Lstat(filepath.Join(dir, f)); err == nil {
			return outcome.Usage("batch_merge_out_invalid", "--out %s holds %s: it is a batch, pipeline or run directory, and its own result would be replaced; give a new directory", dir, f)
		}
	}
	return nil
}

// WriteMerged writes a merged result into dir (created if needed), which
// CheckMergeOut allows.
func WriteMerged(dir string, res *record.PipelineResult) error {
	if err := CheckMergeOut(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	res.Dir, _ = filepath.Abs(dir)
	return artifacts.WriteJSON(filepath.Join(dir, record.FileBatchResult), res)
}
