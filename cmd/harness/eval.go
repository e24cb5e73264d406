package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/eval"
	"github.com/harness-dev/harness/grader"
	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/pipeline"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/runopts"
	"github.com/harness-dev/harness/scorecard"
)

func evalCommand() *cli.Command {
	settings := slices.DeleteFunc(slices.Clone(unitSettings), func(s string) bool { return s == "model" || s == "skills-root" || s == "external-skills-root" })
	return &cli.Command{
		Name:      "eval",
		Usage:     "measure what a skill does for a model: its evals run with and without it, graded, with a gate for CI",
		UsageText: "harness eval SKILL_DIR|EVAL_FILE --model M [--model M2] [--epochs N] [--baseline DIR] [--grader-model M] [--min-pass-rate X] [--min-delta X]",
		Description: "Reads the skill's evals/evals.json (skill-creator's format, as published) or evals/evals.yaml (the same\n" +
			"with checks; schema: eval/eval.schema.json) and evals/triggers.json. Each eval runs with_skill (the skill\n" +
			"preloaded), without_skill (no skill) and, with --baseline, old_skill; on every --model; --epochs times;\n" +
			"each cell a run in its own workspace holding the eval's files, all of them one batch. Checks are decided\n" +
			"by harness; expectations in words by --grader-model (ungraded without one, never passed). A trigger query\n" +
			"runs with the skill in its root's catalog, not preloaded: it triggers when the model loads the skill.\n" +
			"Writes .harness/evals/<id>/: eval-result.json, benchmark.json (skill-creator's schema), benchmark.md,\n" +
			"junit.xml, grading/<cell>.json and the batch of runs. Exit code: 0 when the gate is met (or none was\n" +
			"asked), 1 when it is missed, 4 when cells or the grader could not finish (resume the eval), 2 usage, 5 tamper.",
		Commands: []*cli.Command{evalResumeCommand(), evalMergeCommand(), evalK8sCommand(settings)},
		Flags: slices.Concat([]cli.Flag{
			&cli.StringSliceFlag{Name: "model", Usage: "the `MODEL` every configuration runs on; repeat it to compare models", Sources: cli.EnvVars("HARNESS_MODEL")},
			&cli.IntFlag{Name: "epochs", Usage: "runs of each eval per configuration and model (`N`)", Value: eval.DefaultEpochs},
			&cli.StringFlag{Name: "baseline", Usage: "an older version of the skill run as old_skill beside the others: a `DIR`, or a VERSION kept in --store (a digest or a unique prefix; harness skills versions lists them)"},
			&cli.BoolFlag{Name: "no-without-skill", Usage: "leave out without_skill (compare with --baseline only)"},
			&cli.StringFlag{Name: "skill-dir", Usage: "the skill (`DIR`) an eval file kept outside its evals/ directory measures"},
			&cli.StringFlag{Name: "triggers", Usage: "trigger queries (`FILE`, skill-creator's format) other than evals/triggers.json"},
			&cli.IntFlag{Name: "jobs", Usage: "cells run at once (`N`)", Value: 1},
			&cli.StringFlag{Name: "id", Usage: "eval `ID`", DefaultText: "a new time-sortable id"},
			&cli.StringFlag{Name: "artifacts-dir", Usage: "`DIR` that holds eval directories", Value: eval.DefaultDir},
			&cli.StringFlag{Name: "shard", Usage: "run only shard `I/N` of the cells"},
			&cli.IntFlag{Name: "shards", Usage: "run shard JOB_COMPLETION_INDEX of `N` (Kubernetes Indexed Jobs)"},
			&cli.BoolFlag{Name: "or-resume", Usage: "when the eval directory (--id) already exists, resume it instead of refusing: a retried pod continues its shard"},
			&cli.StringFlag{Name: "base-url", Usage: "OpenAI-compatible API base `URL` of the cells' model", Sources: cli.EnvVars("HARNESS_BASE_URL", "OPENAI_BASE_URL")},
			&cli.StringFlag{Name: "record", Usage: "record every cell's model exchanges (and the grader's) into `DIR`"},
			&cli.StringFlag{Name: "replay", Usage: "replay every cell (and the grader) from `DIR`: no network, no key"},
			&cli.StringSliceFlag{Name: "allow-tool", Usage: "a `TOOL` every cell may use (as harness run)"},
			&cli.StringSliceFlag{Name: "allow-command", Usage: "a command `PATTERN` cells may run (run_command), and that command checks run through"},
			&cli.StringFlag{Name: "command-grant", Usage: "what run_command may touch (`FILE`), for cells and command checks"},
			&cli.StringFlag{Name: "grader-model", Usage: "the `MODEL` that grades expectations in words", Sources: cli.EnvVars("HARNESS_GRADER_MODEL")},
			&cli.StringFlag{Name: "grader-base-url", Usage: "the grader's OpenAI-compatible base `URL`", DefaultText: "--base-url", Sources: cli.EnvVars("HARNESS_GRADER_BASE_URL")},
			&cli.StringFlag{Name: "min-pass-rate", Usage: "gate: with_skill's mean pass rate on every model at least `X` (0-1)"},
			&cli.StringFlag{Name: "min-delta", Usage: "gate: with_skill's mean pass rate minus without_skill's at least `X`"},
			&cli.StringFlag{Name: "no-regression-from", Usage: "gate: no model or eval below an earlier eval of the same eval file (`DIR`, or its shards' DIR:DIR..., each verified)"},
			&cli.StringFlag{Name: "junit", Usage: "also write the JUnit XML to `FILE`"},
			&cli.StringFlag{Name: "summary", Usage: "also write benchmark.md to `FILE` (a CI job summary)"},
		}, unitFlags(settings, "cell"), pipelineOutputFlags("task")),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.NArg() != 1 {
				return usagef("harness eval needs exactly one SKILL_DIR or EVAL_FILE")
			}
			if cmd.Int("jobs") < 1 {
				return usagef("--jobs must be at least 1")
			}
			if n := cmd.Int("epochs"); n < 1 || n > 100 {
				return usagef(fmt.Sprintf("--epochs %d: give 1 to 100", n))
			}
			if cmd.String("record") != "" && cmd.String("replay") != "" {
				return usagef("--record and --replay cannot be used together")
			}
			gate, err := gateOptions(cmd)
			if err != nil {
				return err
			}
			if cmd.Bool("or-resume") && cmd.String("id") == "" {
				return usagef("--or-resume needs --id: it names the directory to resume")
			}
			shard, err := shardOf(cmd)
			if err != nil {
				return err
			}
			layer, err := unitLayer(cmd, settings)
			if err != nil {
				return err
			}
			out := newPipelineOutput(cmd)
			o := eval.Options{
				Suite:    eval.LoadOptions{Path: cmd.Args().First(), SkillDir: cmd.String("skill-dir"), Triggers: cmd.String("triggers")},
				Baseline: cmd.String("baseline"), Store: layer.Settings.Store, Models: cmd.StringSlice("model"), Epochs: int(cmd.Int("epochs")), NoWithout: cmd.Bool("no-without-skill"),
				ArtifactsDir: cmd.String("artifacts-dir"), ID: cmd.String("id"), Jobs: int(cmd.Int("jobs")), Shard: shard, OrResume: cmd.Bool("or-resume"),
				Settings: layer, BaseURL: cmd.String("base-url"), Record: absOrEmpty(cmd.String("record")), Replay: absOrEmpty(cmd.String("replay")),
				AllowTools: cmd.StringSlice("allow-tool"), AllowCommands: cmd.StringSlice("allow-command"), Gate: gate, Common: out.common(),
			}
			if err := evalCommands(&o, cmd); err != nil {
				return err
			}
			if o.Record != "" {
				if err := os.MkdirAll(filepath.Join(o.Record, "grader"), 0o755); err != nil {
					return usagef(fmt.Sprintf("--record %s: %v", o.Record, err))
				}
			}
			if m := cmd.String("grader-model"); m != "" {
				o.GraderBaseURL = firstNonEmptyFlag(cmd.String("grader-base-url"), cmd.String("base-url"))
				g := &graderModels{name: m, baseURL: o.GraderBaseURL, apiKey: graderKey(), record: o.Record, replay: o.Replay}
				if err := g.settle(layer.Settings); err != nil {
					return err
				}
				o.Grader = g
			}
			res, err := eval.Run(ctx, o)
			return evalReport(cmd, res, err)
		},
	}
}

func evalResumeCommand() *cli.Command {
	return &cli.Command{
		Name:      "resume",
		Usage:     "finish an eval: cells that ran are kept, the others run, every cell not yet graded is graded",
		UsageText: "harness eval resume DIR [--grader-model M]",
		Flags: slices.Concat([]cli.Flag{
			&cli.StringFlag{Name: "base-url", Usage: "move the remaining cells to this OpenAI-compatible `URL`", Sources: cli.EnvVars("HARNESS_BASE_URL", "OPENAI_BASE_URL")},
			&cli.StringFlag{Name: "grader-base-url", Usage: "the grader's OpenAI-compatible base `URL`", DefaultText: "--base-url", Sources: cli.EnvVars("HARNESS_GRADER_BASE_URL")},
			&cli.StringFlag{Name: "junit", Usage: "also write the JUnit XML to `FILE`"},
			&cli.StringFlag{Name: "summary", Usage: "also write benchmark.md to `FILE` (a CI job summary)"},
		}, pipelineOutputFlags("task")),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.NArg() != 1 {
				return usagef("harness eval resume needs exactly one eval DIR")
			}
			out := newPipelineOutput(cmd)
			res, err := eval.Resume(ctx, eval.ResumeOptions{Dir: cmd.Args().First(), BaseURL: cmd.String("base-url"), Common: out.common(),
				Commands: func(m record.EvalManifest) *eval.CommandEnv {
					env, _ := commandEnv(m.AllowCommands, m.CommandGrant, "")
					return env
				},
				Grader: func(m record.EvalManifest) eval.GraderFactory {
					if m.GraderModel == "" {
						return nil
					}
					// --base-url moves the cells; the grader stays where it
					// was recorded unless --grader-base-url moves it.
					g := &graderModels{name: m.GraderModel, baseURL: firstNonEmptyFlag(cmd.String("grader-base-url"), m.GraderBaseURL, cmd.String("base-url")), apiKey: graderKey()}
					if m.GraderSettings != nil {
						// Checked when the eval was made.
						_ = g.settle(*m.GraderSettings)
					}
					return g
				}})
			return evalReport(cmd, res, err)
		},
	}
}

func evalK8sCommand(settings []string) *cli.Command {
	return &cli.Command{
		Name:      "k8s",
		Usage:     "print a Kubernetes Indexed Job that runs an eval's cells as N shards",
		UsageText: "harness eval k8s SKILL_DIR --image IMG --shards N --secret NAME --model M [--runs-claim PVC] [--id ID]",
		Description: "Each pod runs `harness eval SKILL_DIR --shards N`, which takes its shard from\n" +
			"JOB_COMPLETION_INDEX, writes to /runs/ID-shard-I (mount a PersistentVolumeClaim there with\n" +
			"--runs-claim) and reads the API key from the Secret, never from the manifest. Afterwards\n" +
			"`harness eval merge /runs/ID-shard-* --out DIR` gives the numbers and applies the gate.\n" +
			"SKILL_DIR is the skill's path inside the image, relative to --workdir.",
		Flags: slices.Concat([]cli.Flag{
			&cli.StringSliceFlag{Name: "model", Usage: "the `MODEL` every configuration runs on; repeat it to compare models"},
			&cli.IntFlag{Name: "epochs", Usage: "runs of each eval per configuration and model (`N`)", Value: eval.DefaultEpochs},
			&cli.StringFlag{Name: "baseline", Usage: "an older version of the skill (`DIR` in the image, or a VERSION in --store)"},
			&cli.StringFlag{Name: "grader-model", Usage: "the `MODEL` that grades expectations in words"},
			&cli.StringSliceFlag{Name: "allow-tool", Usage: "a `TOOL` every cell may use"},
			&cli.StringSliceFlag{Name: "allow-command", Usage: "a command `PATTERN` cells and command checks may run"},
		}, indexedJobFlags("the skill with its evals", "cells", "eval", "the eval directories"), clusterFlags("Job", "the skill"), podFlags("the whole Job"), unitFlags(settings, "cell")),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.NArg() != 1 {
				return usagef("harness eval k8s needs exactly one SKILL_DIR (its path inside the image)")
			}
			if len(cmd.StringSlice("model")) == 0 {
				return usagef("harness eval k8s needs --model: every pod runs the same models")
			}
			if cmd.Int("jobs") < 1 || cmd.Int("parallelism") < 0 {
				return usagef("--jobs must be at least 1 and --parallelism at least 0 (0: every shard at once)")
			}
			if n := cmd.Int("epochs"); n < 1 || n > 100 {
				return usagef(fmt.Sprintf("--epochs %d: give 1 to 100", n))
			}
			args, err := unitArgsOf(cmd, settings)
			if err != nil {
				return err
			}
			for _, m := range cmd.StringSlice("model") {
				args = append(args, "--model="+m)
			}
			args = append(args, fmt.Sprintf("--epochs=%d", cmd.Int("epochs")))
			for _, f := range []string{"baseline", "grader-model"} {
				if v := cmd.String(f); v != "" {
					args = append(args, "--"+f+"="+v)
				}
			}
			for _, f := range []string{"allow-tool", "allow-command"} {
				for _, v := range cmd.StringSlice(f) {
					args = append(args, "--"+f+"="+v)
				}
			}
			o := indexedJob(cmd, args)
			o.Command, o.Merge = []string{"harness", "eval"}, "harness eval merge"
			b, err := pipeline.K8sManifest(o)
			if err != nil {
				return err
			}
			_, err = cmd.Root().Writer.Write(b)
			return err
		},
	}
}

func evalMergeCommand() *cli.Command {
	return &cli.Command{
		Name:      "merge",
		Usage:     "merge the directories of an eval's shards into one result, as one machine would have",
		UsageText: "harness eval merge DIR... --out DIR [--min-pass-rate X] [--min-delta X] [--no-regression-from DIR]",
		Description: "Every DIR must be a finished shard (--shard I/N) of the same eval; together they must\n" +
			"grade every cell once. Each is verified first (exit 5 when one does not). --out receives\n" +
			"eval-result.json, benchmark.json, benchmark.md and junit.xml; the gate is applied to the whole.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Usage: "`DIR` for the merged result (created)", Required: true},
			&cli.StringFlag{Name: "min-pass-rate", Usage: "gate: with_skill's mean pass rate on every model at least `X` (0-1)"},
			&cli.StringFlag{Name: "min-delta", Usage: "gate: with_skill's mean pass rate minus without_skill's at least `X`"},
			&cli.StringFlag{Name: "no-regression-from", Usage: "gate: no model or eval below an earlier eval (`DIR`, verified) of the same evals"},
			&cli.StringFlag{Name: "junit", Usage: "also write the JUnit XML to `FILE`"},
			&cli.StringFlag{Name: "summary", Usage: "also write benchmark.md to `FILE` (a CI job summary)"},
			&cli.BoolFlag{Name: "json", Usage: "print the merged result as JSON"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.NArg() == 0 {
				return usagef("harness eval merge needs the shard directories")
			}
			gate, err := gateOptions(cmd)
			if err != nil {
				return err
			}
			res, err := eval.Merge(eval.MergeOptions{Dirs: cmd.Args().Slice(), Out: cmd.String("out"), Key: runKey(), Gate: gate})
			return evalReport(cmd, res, err)
		},
	}
}

func gateOptions(cmd *cli.Command) (scorecard.GateOptions, error) {
	var g scorecard.GateOptions
	for _, f := range []struct {
		name string
		dst  **float64
		min  float64
	}{{"min-pass-rate", &g.MinPassRate, 0}, {"min-delta", &g.MinDelta, -1}} {
		s := cmd.String(f.name)
		if s == "" {
			continue
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || v < f.min || v > 1 {
			return g, usagef(fmt.Sprintf("--%s %q: give a number from %g to 1", f.name, s, f.min))
		}
		*f.dst = &v
	}
	g.NoRegressionFrom = cmd.String("no-regression-from")
	return g, nil
}

// evalCommands reads --allow-command and --command-grant once, for the
// cells' run_command and for command checks alike.
func evalCommands(o *eval.Options, cmd *cli.Command) error {
	o.CommandGrant = absOrEmpty(cmd.String("command-grant"))
	env, err := commandEnv(o.AllowCommands, o.CommandGrant, cmd.String("sandbox"))
	o.Commands = env
	return err
}

// commandEnv is what command checks run through: nil without patterns.
func commandEnv(allow []string, grantFile, sandbox string) (*eval.CommandEnv, error) {
	if len(allow) == 0 {
		return nil, nil
	}
	patterns, err := runopts.CommandPatterns(allow)
	if err != nil {
		return nil, usagef(fmt.Sprintf("--allow-command: %v", err))
	}
	env := &eval.CommandEnv{Patterns: patterns, Sandbox: sandbox}
	if grantFile != "" {
		ro := runopts.Options{CommandGrant: grantFile}
		if err := ro.ReadCommandGrant(); err != nil {
			return nil, err
		}
		env.Grant = ro.CommandGrantFrontmatter()
	}
	return env, nil
}

func graderKey() string {
	if k := os.Getenv("HARNESS_GRADER_API_KEY"); k != "" {
		return k
	}
	return apiKey()
}

func firstNonEmptyFlag(xs ...string) string {
	for _, x := range xs {
		if x != "" {
			return x
		}
	}
	return ""
}

// graderModels gives each cell its grader: the endpoint, recorded into or
// replayed from the cell's own grader cassette.
type graderModels struct {
	name, baseURL, apiKey string
	record, replay        string
	// retry and stream are the run settings' (--request-timeout,
	// --max-retries, --retry-max-wait, --stream): a grader that never
	// answers is bounded as a cell's model is.
	retry  loop.RetryPolicy
	stream bool
}

// settle takes the grader's retries and streaming from the run settings
// the cells use.
func (g *graderModels) settle(s record.Settings) error {
	for _, d := range []struct {
		flag, v string
		to      *time.Duration
	}{{"request-timeout", s.RequestTimeout, &g.retry.RequestTimeout}, {"retry-max-wait", s.RetryMaxWait, &g.retry.MaxDelay}} {
		if d.v == "" {
			continue
		}
		v, err := time.ParseDuration(d.v)
		if err != nil {
			return usagef(fmt.Sprintf("--%s %q: give a duration such as 30s", d.flag, d.v))
		}
		*d.to = v
	}
	if s.MaxRetries != nil {
		if err := runopts.CheckMaxRetries(*s.MaxRetries); err != nil {
			return err
		}
		g.retry.MaxAttempts = *s.MaxRetries + 1
	}
	g.stream = s.Stream != nil && *s.Stream
	return nil
}

func (g *graderModels) Name() string { return g.name }

func (g *graderModels) ForCell(cell string) (*grader.Grader, error) {
	if g.replay != "" {
		c, err := loop.OpenCassette(filepath.Join(g.replay, "grader", cell+".jsonl"))
		if err != nil {
			return nil, &grader.Error{Model: g.name, Err: err}
		}
		return &grader.Grader{Model: c, Name: g.name}, nil
	}
	var m loop.Model = loop.NewOpenAI(loop.OpenAIConfig{BaseURL: g.baseURL, APIKey: g.apiKey, Retry: g.retry, Stream: g.stream})
	if g.record != "" {
		// Redacted as every cassette is: an endpoint may echo the key.
		r, err := loop.NewRecorder(m, filepath.Join(g.record, "grader", cell+".jsonl"), artifacts.NewRedactor(g.apiKey, apiKey()))
		if err != nil {
			return nil, err
		}
		m = r
	}
	return &grader.Grader{Model: m, Name: g.name}, nil
}

// evalReport prints the numbers and writes the files asked for; the exit
// code is the eval's.
func evalReport(cmd *cli.Command, res *record.EvalResult, err error) error {
	if res == nil {
		return err
	}
	if f := cmd.String("junit"); f != "" {
		if werr := copyFile(filepath.Join(res.Dir, record.FileEvalJUnit), f); werr != nil {
			return fmt.Errorf("--junit: %w", werr)
		}
	}
	if f := cmd.String("summary"); f != "" {
		if werr := copyFile(filepath.Join(res.Dir, record.FileBenchmarkMD), f); werr != nil {
			return fmt.Errorf("--summary: %w", werr)
		}
	}
	w := cmd.Root().Writer
	if cmd.Bool("json") {
		b, _ := json.Marshal(res)
		fmt.Fprintf(w, "%s\n", b)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MODEL\tCONFIGURATION\tN\tPASS RATE\t95% INTERVAL\tSECONDS\tTOKENS")
	for _, s := range res.Summaries {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.2f ± %.2f\t[%.2f, %.2f]\t%.1f\t%.0f\n", s.Model, s.Configuration, s.PassRate.N, s.PassRate.Mean, s.PassRate.Stddev,
			s.PassRate.Low95, s.PassRate.High95, s.Seconds.Mean, s.Tokens.Mean)
	}
	tw.Flush()
	for _, d := range res.Deltas {
		fmt.Fprintf(w, "delta on %s: %s − %s = %+.2f\n", d.Model, d.Of, d.Minus, d.PassRate)
	}
	for _, t := range res.Triggers {
		fmt.Fprintf(w, "triggers on %s: precision %.2f, recall %.2f, accuracy %.2f (n=%d)\n", t.Model, t.Precision, t.Recall, t.Accuracy, t.N)
	}
	for _, n := range res.NonDiscriminating {
		fmt.Fprintf(w, "not discriminating: eval %s %q %s in every configuration\n", n.EvalID, n.Text, n.Always)
	}
	if res.Gate != nil {
		for _, m := range res.Gate.Missed {
			fmt.Fprintf(cmd.Root().ErrWriter, "harness: gate missed: %s\n", m)
		}
	}
	fmt.Fprintf(cmd.Root().ErrWriter, "harness: eval %s %s (exit %d): %s\n", res.EvalID, res.Status, res.ExitCode, res.Dir)
	if err != nil {
		if e := outcome.As(err); e.Exit == res.ExitCode {
			e.Reported = e.Code == "eval_gate_missed"
		}
	}
	return err
}

func absOrEmpty(p string) string {
	if p == "" {
		return ""
	}
	a, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return a
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}
