package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/urfave/cli/v3"

	"github.com/harness-dev/harness/internal/termsafe"
	"github.com/harness-dev/harness/pipeline"
	"github.com/harness-dev/harness/record"
)

func pipelineCommand() *cli.Command {
	return &cli.Command{
		Name:  "pipeline",
		Usage: "run phases (spec, build, critic, ...) that each are one harness run, in dependency order",
		Description: "A pipeline file (YAML; schema: pipeline/pipeline.schema.json) declares defaults shared by\n" +
			"every phase and the phases: name, prompt or prompt-file, needs, skills, allow-tools,\n" +
			"allow-skill-scripts, output-schema, attach, model and limits. A prompt is a Go template\n" +
			"over .vars and the phases it needs: {{ .phases.spec.answer }},\n" +
			"{{ .phases.spec.structuredOutput.field }}, {{ .phases.spec.answerFile }} (for attach).\n" +
			"A phase gets only the skills, tools and scripts it names.",
		Commands: []*cli.Command{pipelineRunCommand(), pipelineResumeCommand(), pipelineCheckCommand(), pipelineK8sCommand()},
	}
}

// pipelineOutputFlags are the output flags of the commands that run the
// units ("phase" or "task") of a pipeline or a batch.
func pipelineOutputFlags(unit string) []cli.Flag {
	journal := "the pipeline journal's events (pipeline started, phase started, finished, skipped, reused)"
	if unit == "task" {
		journal = "the batch journal's events (batch started, task started, finished, skipped, reused)"
	}
	return append([]cli.Flag{
		&cli.BoolFlag{Name: "json", Usage: "stream " + journal + " as JSONL on stdout"},
		&cli.BoolFlag{Name: "quiet", Usage: "no progress on stderr"},
	}, snapshotCacheFlags()...)
}

// snapshotCacheFlags are --snapshot-cache and --no-snapshot-cache, for the
// commands that start or resume runs.
func snapshotCacheFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "snapshot-cache", Usage: "`DIR` keeping skill file digests by stat fingerprint between runs", DefaultText: "the user cache directory", Sources: cli.EnvVars("HARNESS_SNAPSHOT_CACHE")},
		&cli.BoolFlag{Name: "no-snapshot-cache", Usage: "read every skill file, without the snapshot cache"},
	}
}

func pipelineRunCommand() *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "run a pipeline file from the start",
		UsageText: "harness pipeline run FILE [--var NAME=VALUE]... [--jobs N] [--replay DIR | --record DIR]\n   harness pipeline run FILE --id ID --phase NAME [...]",
		Description: "Creates a pipeline directory (default .harness/pipelines/<id>) holding pipeline.json,\n" +
			"pipeline-journal.jsonl, pipeline-result.json, answers/<phase>.md and phases/<phase>/,\n" +
			"each phase's run directory (with its result.json). Exit code: 0 when every phase\n" +
			"succeeded, otherwise the code of the first phase in dependency order that did not;\n" +
			"phases whose needs did not succeed are skipped. The API key is read from\n" +
			"$HARNESS_API_KEY, then $OPENAI_API_KEY.",
		Flags: append([]cli.Flag{
			&cli.StringSliceFlag{Name: "var", Usage: "set `NAME=VALUE` for {{ .vars.NAME }} (repeatable; over the file's vars)"},
			&cli.IntFlag{Name: "jobs", Usage: "independent phases run at once (`N`)", Value: 1},
			&cli.StringFlag{Name: "id", Usage: "pipeline `ID`", DefaultText: "a new time-sortable id"},
			&cli.StringFlag{Name: "phase", Usage: "run only phase `NAME` in the pipeline directory --id names (made by whichever phase runs first), once the phases it needs have succeeded there; a phase that succeeded is not run again and one that stopped resumes: how a scheduler with a pod per phase runs a pipeline (harness pipeline k8s)"},
			&cli.StringFlag{Name: "artifacts-dir", Usage: "`DIR` that holds pipeline directories", Value: pipeline.DefaultArtifactsDir},
			&cli.StringFlag{Name: "workspace", Usage: "workspace `DIR` of every phase, over the file's defaults.workspace"},
			&cli.StringFlag{Name: "base-url", Usage: "OpenAI-compatible API base `URL`, over the file's defaults", Sources: cli.EnvVars("HARNESS_BASE_URL", "OPENAI_BASE_URL")},
			&cli.StringFlag{Name: "record", Usage: "record each phase's model exchanges into `DIR`/<phase>.jsonl"},
			&cli.StringFlag{Name: "replay", Usage: "replay each phase from `DIR`/<phase>.jsonl: no network, no key"},
		}, append(unitFlags(unitSettings, "phase"), pipelineOutputFlags("phase")...)...),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.NArg() != 1 {
				return usagef("harness pipeline run needs exactly one pipeline FILE")
			}
			vars, err := keyValues(cmd.StringSlice("var"), "--var")
			if err != nil {
				return err
			}
			if cmd.Int("jobs") < 1 {
				return usagef("--jobs must be at least 1")
			}
			if err := cassetteDirs(cmd); err != nil {
				return err
			}
			settings, err := unitLayer(cmd, unitSettings)
			if err != nil {
				return err
			}
			out := newPipelineOutput(cmd)
			res, err := pipeline.Run(ctx, pipeline.Options{
				Settings: settings,
				File:     cmd.Args().First(), Vars: vars, Jobs: int(cmd.Int("jobs")), ID: cmd.String("id"),
				ArtifactsDir: cmd.String("artifacts-dir"), Workspace: cmd.String("workspace"), BaseURL: cmd.String("base-url"),
				Record: cmd.String("record"), Replay: cmd.String("replay"), Phase: cmd.String("phase"),
				Common: out.common(),
			})
			out.report(res)
			return err
		},
	}
}

func pipelineResumeCommand() *cli.Command {
	return &cli.Command{
		Name:      "resume",
		Usage:     "continue a stopped pipeline: succeeded phases are reused, the stopped one resumes, the rest run",
		UsageText: "harness pipeline resume DIR [--allow-drift]",
		Description: "A phase that succeeded is not run again once its result.json matches the digest the\n" +
			"pipeline journal recorded. A phase whose run stopped resumably (a limit, a provider error,\n" +
			"an interrupt, a crash) resumes from its own journal, with the run's drift checks; one that\n" +
			"failed for good runs again (the old directory kept as phases/<name>.attempt-N). A pipeline\n" +
			"file changed since the start is drift: refused (exit 5) unless --allow-drift. A phase waiting\n" +
			"for a person (exit 6) resumes with the calls --approve and --deny decide.",
		Flags: append([]cli.Flag{
			&cli.BoolFlag{Name: "allow-drift", Usage: "continue although the pipeline file changed (recorded); the remaining phases use the new file"},
			&cli.StringFlag{Name: "base-url", Usage: "move the remaining phases to this OpenAI-compatible `URL` (transport; the key goes only there or to the recorded URL)", Sources: cli.EnvVars("HARNESS_BASE_URL", "OPENAI_BASE_URL")},
			&cli.StringFlag{Name: "max-turns", Usage: "turn limit of the phases that resume: `N` in all, or +N more than they used", DefaultText: "as recorded"},
		}, resumeFlags("phase")...),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.NArg() != 1 {
				return usagef("harness pipeline resume needs exactly one pipeline DIR")
			}
			settings, err := resumeLayer(cmd, "pipeline")
			if err != nil {
				return err
			}
			out := newPipelineOutput(cmd)
			res, err := pipeline.Resume(ctx, pipeline.ResumeOptions{Dir: cmd.Args().First(), AllowDrift: cmd.Bool("allow-drift"), MaxTurns: cmd.String("max-turns"), BaseURL: cmd.String("base-url"), Settings: settings,
				Approve: cmd.StringSlice("approve"), Deny: cmd.StringSlice("deny"), DenyReason: cmd.String("reason"), Actor: cmd.String("actor"), Common: out.common()})
			out.report(res)
			return err
		},
	}
}

func pipelineCheckCommand() *cli.Command {
	return &cli.Command{
		Name:      "check",
		Usage:     "validate a pipeline file (schema, names, needs, cycles, templates) without running it",
		UsageText: "harness pipeline check FILE",
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.NArg() != 1 {
				return usagef("harness pipeline check needs exactly one pipeline FILE")
			}
			f, err := pipeline.Load(cmd.Args().First(), nil)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.Root().Writer, "%s: %d phases, in order: %s\n", cmd.Args().First(), len(f.Phases), strings.Join(f.Order(), ", "))
			return nil
		},
	}
}

// pipelineOutput renders a pipeline for people (progress on stderr, a
// table at the end) or for machines (--json: the journal's events).
type pipelineOutput struct {
	stdout, stderr io.Writer
	json, quiet    bool
	snapshotCache  string
	mu             sync.Mutex
}

func newPipelineOutput(cmd *cli.Command) *pipelineOutput {
	return &pipelineOutput{stdout: cmd.Root().Writer, stderr: cmd.Root().ErrWriter, json: cmd.Bool("json"), quiet: cmd.Bool("quiet"),
		snapshotCache: snapshotCacheDir(cmd.String("snapshot-cache"), cmd.Bool("no-snapshot-cache"))}
}

func (o *pipelineOutput) common() pipeline.Common {
	c := pipeline.Common{APIKey: apiKey(), RunKey: runKey(), Version: version, SnapshotCache: o.snapshotCache}
	if !o.quiet {
		c.Stderr = o.stderr
	}
	if o.json {
		c.OnEvent = func(line []byte) {
			o.mu.Lock()
			defer o.mu.Unlock()
			o.stdout.Write(line)
			if len(line) == 0 || line[len(line)-1] != '\n' {
				o.stdout.Write([]byte("\n"))
			}
		}
	}
	return c
}

func (o *pipelineOutput) report(res *record.PipelineResult) {
	if res == nil || o.json {
		return
	}
	tw := tabwriter.NewWriter(o.stdout, 0, 4, 2, ' ', 0)
	units, kind := res.Phases, "pipeline"
	if res.Type == record.TypeBatchResult {
		units, kind = res.Tasks, "batch"
		fmt.Fprintln(tw, "TASK\tSTATUS\tEXIT\tTOKENS\tRUN DIRECTORY")
	} else {
		fmt.Fprintln(tw, "PHASE\tSTATUS\tEXIT\tTOKENS\tRUN DIRECTORY")
	}
	for _, p := range units {
		status := p.Status
		if p.Reused {
			status += " (reused)"
		}
		runDir := p.RunDir
		if runDir != "" && !filepath.IsAbs(runDir) {
			// Recorded relative to the directory, shown where it is.
			runDir = filepath.Join(res.Dir, runDir)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", p.Name, status, p.ExitCode, p.Usage.TotalTokens, runDir)
	}
	tw.Flush()
	if !o.quiet {
		for _, p := range units {
			for _, c := range p.PendingApprovals {
				e := termsafe.Escape
				fmt.Fprintf(o.stderr, "harness: %s %s waits for approval of %s (%s): %s; decide with --approve %s:%s or --deny %s:%s\n", unitWord(kind), e(p.Name), e(c.CallID), e(c.Tool), e(c.Why), e(p.Name), e(c.CallID), e(p.Name), e(c.CallID))
			}
		}
		fmt.Fprintf(o.stderr, "harness: %s %s %s (exit %d)\nharness: %s directory: %s\n", kind, res.ID(), res.Status, res.ExitCode, kind, res.Dir)
		if res.ResumeCommand != "" {
			fmt.Fprintf(o.stderr, "harness: resume with: %s\n", res.ResumeCommand)
		}
	}
}

// apiKey is the key every model call uses: $HARNESS_API_KEY, then
// $OPENAI_API_KEY.
func apiKey() string {
	if k := os.Getenv("HARNESS_API_KEY"); k != "" {
		return k
	}
	return os.Getenv("OPENAI_API_KEY")
}

// approvalFlags decide calls that units left waiting for a person.
func approvalFlags(unit string) []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "approve", Usage: "run the tool call `CALL_ID` (or " + strings.ToUpper(unit) + ":CALL_ID) a " + unit + " left waiting for a person, and go on"},
		&cli.StringSliceFlag{Name: "deny", Usage: "refuse the waiting tool call `CALL_ID` (or " + strings.ToUpper(unit) + ":CALL_ID): its model is told a person refused it"},
		&cli.StringFlag{Name: "reason", Usage: "with --deny: the `TEXT` the model is told"},
		&cli.StringFlag{Name: "actor", Usage: "who decides, journaled with each decision (`NAME`)", DefaultText: "the OS user"},
	}
}

func unitWord(kind string) string {
	if kind == "batch" {
		return "task"
	}
	return "phase"
}

func pipelineK8sCommand() *cli.Command {
	return &cli.Command{
		Name:      "k8s",
		Usage:     "print an Argo Workflow that runs a pipeline with a pod per phase, in the order of its needs",
		UsageText: "harness pipeline k8s FILE --image IMG --secret NAME --runs-claim PVC [--id ID] [--retries N] [--model NAME] ...",
		Description: "The Workflow's DAG mirrors the pipeline's needs: one task per phase, each running\n" +
			"`harness pipeline run FILE --id ID --phase NAME`, so that the phases share one pipeline\n" +
			"directory (/runs/pipelines/ID) and one workspace (/runs/workspaces/ID, the image's --workdir\n" +
			"copied there once) on the claim. A phase runs once the phases it needs succeeded there,\n" +
			"and Argo retries one whose run stopped on an outage or an interrupt (exit 4 or 130): the\n" +
			"retry resumes that run. FILE is read here and passed as given: its path relative to\n" +
			"--workdir in the image. Without --id each submission gets its own directory, named as\n" +
			"Argo names the Workflow.",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "image", Usage: "container `IMAGE` holding harness, the workspace and FILE"},
			&cli.StringFlag{Name: "runs-claim", Usage: "PersistentVolumeClaim `NAME` mounted at /runs in every phase's pod (ReadWriteMany when phases run at once)"},
			&cli.StringFlag{Name: "id", Usage: "pipeline `ID`, also the Workflow's name", DefaultText: "a new one per submission"},
			&cli.StringFlag{Name: "base-url", Usage: "OpenAI-compatible API base `URL` for the pods"},
			&cli.IntFlag{Name: "retries", Usage: "further attempts of a phase that stopped on an outage or an interrupt (`N`)", Value: 2},
			sandboxProfileFlag(),
		}, slices.Concat(clusterFlags("Workflow", "the workspace and FILE"), podFlags("the whole Workflow"), unitFlags(unitSettings, "phase"))...),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.NArg() != 1 {
				return usagef("harness pipeline k8s needs exactly one pipeline FILE (its path relative to --workdir in the image)")
			}
			args, err := unitArgs(cmd)
			if err != nil {
				return err
			}
			f, err := pipeline.Load(cmd.Args().First(), nil)
			if err != nil {
				return err
			}
			b, err := pipeline.ArgoWorkflow(pipeline.ArgoOptions{
				File: f, Path: cmd.Args().First(), Image: cmd.String("image"), ID: cmd.String("id"), Namespace: cmd.String("namespace"),
				WorkDir: cmd.String("workdir"), RunsClaim: cmd.String("runs-claim"), Secret: cmd.String("secret"), SecretKey: cmd.String("secret-key"),
				BaseURL: cmd.String("base-url"), Retries: int(cmd.Int("retries")), Args: args, Pod: podFrom(cmd), SandboxProfile: cmd.String("sandbox-profile"),
			})
			if err != nil {
				return err
			}
			_, err = cmd.Root().Writer.Write(b)
			return err
		},
	}
}
