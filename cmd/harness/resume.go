package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/run"
)

// frozenFlags would change what the run is; a resume continues the run
// with its recorded inputs, so they are refused with a reason.
var frozenFlags = []string{"skill", "skills-root", "external-skills-root", "cwd", "prompt", "prompt-file", "allow-tool", "allow-skill-script", "sandbox", "run-id", "artifacts-dir", "config"}

// runResumeFlags are what resume and continue both take.
func runResumeFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "allow-drift", Usage: "continue even if skills or the harness changed since the run started (tools still check the run-start snapshot)"},
		&cli.StringFlag{Name: "max-turns", Usage: "turn limit for the whole run: `N`, or +N more than already used", DefaultText: "as recorded"},
		&cli.DurationFlag{Name: "timeout", Usage: "wall-clock limit `DURATION` for this resume", DefaultText: "none"},
		&cli.Int64Flag{Name: "max-tokens", Usage: "total token limit `N` for the whole run", DefaultText: "the recorded one"},
		&cli.BoolFlag{Name: "json", Usage: "stream journal events to stdout as JSONL and nothing else"},
		&cli.StringFlag{Name: "record", Usage: "record model exchanges into cassette `FILE`"},
		&cli.StringFlag{Name: "replay", Usage: "serve model responses from cassette `FILE`: no network, no key"},
		&cli.BoolFlag{Name: "quiet", Usage: "no progress on stderr"},
		snapshotCacheFlags()[0], snapshotCacheFlags()[1],
		&cli.StringFlag{Name: "base-url", Usage: "continue on another OpenAI-compatible endpoint `URL` (transport, not identity); the key goes only to this URL or the one the verified journal recorded [$HARNESS_BASE_URL, $OPENAI_BASE_URL]"},
		&cli.DurationFlag{Name: "request-timeout", Usage: "bound on one model request `DURATION`", DefaultText: "5m"},
		&cli.IntFlag{Name: "max-retries", Usage: "retries of a transient provider failure (`N`)", Value: 3},
		&cli.DurationFlag{Name: "retry-max-wait", Usage: "longest wait `DURATION` between retries", DefaultText: "30s"},
		&cli.StringFlag{Name: "model", Usage: "continue on model `NAME` (needs --allow-model-change; recorded as drift)"},
		&cli.BoolFlag{Name: "allow-model-change", Usage: "let --model change the run's model, and --wire-api the protocol it is reached with"},
		&cli.StringFlag{Name: "wire-api", Usage: "continue over wire `API` chat or responses (needs --allow-model-change; recorded as drift)", DefaultText: "the recorded one"},
		&cli.StringSliceFlag{Name: "tier", Usage: "map model tiers anew, as `TIER=MODEL`; a change is drift, refused unless --allow-drift", DefaultText: "as recorded"},
		&cli.BoolFlag{Name: "stream", Usage: "use streamed responses"},
		&cli.StringFlag{Name: "fallback-model", Usage: "model `NAME` to continue with when the run's model fails with an outage after its retries"},
		&cli.StringFlag{Name: "workspace", Usage: "the workspace `DIR` this environment has: the resume is refused unless it is the run's"},
		&cli.StringFlag{Name: "prompt-role", Usage: "the prompt `ROLE` this environment expects: the resume is refused unless it is the run's"},
		&cli.StringSliceFlag{Name: "approve", Usage: "run tool call `CALL_ID`, which the run left waiting for a person (status awaiting_approval; `harness approvals` lists them), and continue"},
		&cli.StringSliceFlag{Name: "deny", Usage: "refuse waiting tool call `CALL_ID`: the model is told a person refused it, and the run continues"},
		&cli.StringFlag{Name: "reason", Usage: "with --deny: the `TEXT` the model is told"},
		&cli.StringFlag{Name: "actor", Usage: "who decides --approve and --deny, journaled with the decision (`NAME`)", DefaultText: "the OS user"},
		&cli.StringFlag{Name: "result-file", Usage: "copy result.json to `FILE`", DefaultText: "the run's own --result-file, recorded when it started"},
		&cli.StringFlag{Name: "output-last-message", Usage: "write the final answer to `FILE`", DefaultText: "the run's own --output-last-message"},
	}
}

// frozen are frozenFlags as hidden flags, but for those a command takes.
func frozen(takes ...string) []cli.Flag {
	var out []cli.Flag
	for _, f := range frozenFlags {
		if !slices.Contains(takes, f) {
			out = append(out, &cli.StringSliceFlag{Name: f, Hidden: true})
		}
	}
	return out
}

func resumeCommand() *cli.Command {
	flags := append(runResumeFlags(), frozen()...)
	return &cli.Command{
		Name:      "resume",
		Usage:     "continue a stopped run from its journal, if nothing it depends on changed",
		UsageText: "harness resume RUN_DIR [--allow-drift] [--max-turns N|+N] [--timeout DUR] [--max-tokens N] [--json] [--record FILE | --replay FILE]",
		Description: "Verifies RUN_DIR first, as `harness verify` does (journal hash chain, seal, inputs and\n" +
			"identity, referenced files): a directory edited since harness wrote it is refused (exit 5,\n" +
			"run_dir_tampered). Then rebuilds the conversation from its journal (a torn last line from a crash is\n" +
			"dropped), re-scans the recorded skill roots and compares them, the harness version, the\n" +
			"tools and the policy with what the run recorded. Any drift is written to drift-report.json\n" +
			"and refuses the resume (exit 5) unless --allow-drift. A write or side-effect tool call that\n" +
			"was running when the run stopped is not repeated: the model is told its outcome is unknown.\n" +
			"Exit codes as for `harness run`; resuming a run that succeeded is exit 2.",
		Flags: flags,
		Action: func(ctx context.Context, cmd *cli.Command) error {
			return resumeAction(ctx, cmd, "")
		},
	}
}

func continueCommand() *cli.Command {
	flags := append(runResumeFlags(),
		&cli.StringFlag{Name: "prompt", Usage: "the follow-up instruction `TEXT`"},
		&cli.StringFlag{Name: "prompt-file", Usage: "read the follow-up from `FILE` (- for standard input), at most 16 MiB"},
	)
	flags = append(flags, frozen("prompt", "prompt-file")...)
	return &cli.Command{
		Name:      "continue",
		Usage:     "give a run that succeeded a follow-up instruction, as a new segment of the same run",
		UsageText: "harness continue RUN_DIR --prompt TEXT [--max-turns N|+N] [--result-file FILE] ...",
		Description: "Verifies RUN_DIR first, as resume does, and refuses a run that did not succeed (resume\n" +
			"finishes those). The follow-up is journaled (run.continued, with the run's prompt role) and\n" +
			"the conversation goes on from the run's answer: same run id, identity, journal chain, skills\n" +
			"and policy; an argument the follow-up names is the operator's, as the task's are. Drift is\n" +
			"checked as for resume. Exit codes as for `harness run`.\n\n" +
			"Turns: the follow-up gets as many turns (and tokens) as the run was given (its recorded\n" +
			"--max-turns, default 50, and --max-tokens), counted from what the run already used;\n" +
			"--max-turns +N gives it N, --max-turns N caps the whole run (refused, exit 2, when that\n" +
			"leaves it no turn). A follow-up refused, or one that ends without an answer, leaves the\n" +
			"run's previous answer in result.json and the --output-last-message file.",
		Flags: flags,
		Action: func(ctx context.Context, cmd *cli.Command) error {
			// Flags only: a HARNESS_PROMPT or config file meant for runs is
			// not a follow-up.
			ro := &resolvedOptions{values: map[string]any{"prompt": cmd.String("prompt"), "prompt-file": cmd.String("prompt-file")}, sources: map[string]string{"prompt": "flag"}}
			text, _, err := readPrompt(cmd.Root().Reader, ro, cmd)
			if err != nil {
				return err
			}
			if strings.TrimSpace(text) == "" {
				return usagef("harness continue needs the follow-up: pass --prompt TEXT or --prompt-file FILE")
			}
			return resumeAction(ctx, cmd, text)
		},
	}
}

// resumeAction resumes the run cmd names, with a follow-up for continue.
func resumeAction(ctx context.Context, cmd *cli.Command, followUp string) error {
	for _, f := range frozenFlags {
		if cmd.IsSet(f) && (followUp == "" || f != "prompt" && f != "prompt-file") {
			if f == "skill" {
				return usagef("--skill preloading is not supported with " + cmd.Name + ": the run keeps the skills it started with")
			}
			return usagef(fmt.Sprintf("--%s cannot change on %s: the run continues with its recorded inputs (start a new run to change it)", f, cmd.Name))
		}
	}
	outs, err := outputTargets(cmd.String("result-file"), cmd.String("output-last-message"))
	if err != nil {
		return err
	}
	res, err := resume(ctx, cmd, outs, followUp)
	if res != nil {
		// The run's recorded targets, or these flags over them.
		outs = res.Outputs
	} else if followUp != "" {
		// A refused follow-up leaves the run's answer where it is: the
		// last-message file holds the run's last answer, which stands,
		// and so does a result file that holds this run's result (the
		// run's own --result-file named again): the refusal is on stderr.
		outs.LastMessage = ""
		if holdsRunResult(outs.ResultFile, cmd.Args().First()) {
			outs.ResultFile = ""
		}
	}
	if werr := deliver(cmd, res, err, outs); werr != nil && err == nil {
		return werr
	}
	return err
}

// resume continues the run directory cmd names.
func resume(ctx context.Context, cmd *cli.Command, outs record.Outputs, followUp string) (*run.Result, error) {
	if cmd.NArg() != 1 {
		return nil, usagef("harness " + cmd.Name + " takes exactly one RUN_DIR (a directory under .harness/runs)")
	}
	key := os.Getenv("HARNESS_API_KEY")
	if key == "" {
		key = os.Getenv("OPENAI_API_KEY")
	}
	jsonOut, quiet := cmd.Bool("json"), cmd.Bool("quiet")
	stdout, stderr := cmd.Root().Writer, cmd.Root().ErrWriter
	ev := newEvents(cmd, jsonOut, quiet)
	warnRelativePath(ev.stderr())
	res, err := run.Resume(ctx, run.ResumeOptions{
		RunDir:           cmd.Args().First(),
		AllowDrift:       cmd.Bool("allow-drift"),
		MaxTurns:         cmd.String("max-turns"),
		Timeout:          cmd.Duration("timeout"),
		MaxTokens:        cmd.Int64("max-tokens"),
		Record:           cmd.String("record"),
		Replay:           cmd.String("replay"),
		APIKey:           key,
		RunKey:           runKey(),
		RequestTimeout:   cmd.Duration("request-timeout"),
		MaxRetries:       intPtr(int(cmd.Int("max-retries"))),
		RetryMaxWait:     cmd.Duration("retry-max-wait"),
		BaseURL:          firstSet(cmd.String("base-url"), os.Getenv("HARNESS_BASE_URL"), os.Getenv("OPENAI_BASE_URL")),
		ExpectWorkspace:  cmd.String("workspace"),
		ExpectPromptRole: cmd.String("prompt-role"),
		Model:            cmd.String("model"),
		AllowModelChange: cmd.Bool("allow-model-change"),
		WireAPI:          cmd.String("wire-api"),
		Tiers:            cmd.StringSlice("tier"),
		FallbackModel:    cmd.String("fallback-model"),
		Stream:           cmd.Bool("stream"),
		OnEvent:          ev.render,
		Stderr:           ev.stderr(),
		SnapshotCache:    snapshotCacheDir(cmd.String("snapshot-cache"), cmd.Bool("no-snapshot-cache")),
		IndexCache:       indexCache(""),
		EvalDraft:        draftEvaluator,
		Version:          version,
		Approve:          cmd.StringSlice("approve"),
		Deny:             cmd.StringSlice("deny"),
		DenyReason:       cmd.String("reason"),
		Actor:            cmd.String("actor"),
		Outputs:          outs,
		FollowUp:         followUp,
	})
	ev.Close()
	reportResult(stdout, stderr, res, err, jsonOut, quiet)
	return res, err
}

func firstSet(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
