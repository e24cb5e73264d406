package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/reflection"
	"github.com/harness-dev/harness/run"
)

func reflectCommand() *cli.Command {
	return &cli.Command{
		Name:  "reflect",
		Usage: "ask a model whether a finished run followed a reusable procedure, and let it propose the skill through SkillForge",
		UsageText: "harness reflect RUN_DIR [--model M] [--approve-created TIER] [--replay FILE | --record FILE] [harness run flags]\n\n" +
			"The run directory is verified first; a run that did not succeed (exit 2), that was tampered\n" +
			"with, or that went on with skills changed under it (--allow-drift; exit 5) is refused.\n" +
			"Its task, tool calls and answer (redacted, bounded, in ARTIFACTS_DIR/reflections/RUN_ID.md) are\n" +
			"attached as context to a new run on the same workspace and skill roots, whose prompt asks\n" +
			"whether a reusable procedure was followed. A proposal is a create_skill call and goes through\n" +
			"SkillForge: a manifest is required, its tests run in the sandbox, and it is promoted or left\n" +
			"pending by --approve-created (default low); its history names the run it was learned from.\n" +
			"The model, workspace and skill roots default to the run's; the reflection is a run like any\n" +
			"other (cassettes, resume, exit codes).",
		Flags: runFlags(),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.NArg() != 1 {
				return usagef("harness reflect takes exactly one RUN_DIR: the finished run to learn from")
			}
			if cmd.IsSet("prompt") || cmd.IsSet("prompt-file") {
				return usagef("harness reflect gives the reflection its own prompt: drop --prompt and --prompt-file")
			}
			return reflectOn(ctx, cmd, cmd.Args().First())
		},
	}
}

// reflectOn runs the reflection of the run at dir with cmd's flags, the
// source run's settings filling in what they leave out.
func reflectOn(ctx context.Context, cmd *cli.Command, dir string) error {
	src, err := reflection.Open(dir, runKey())
	if err != nil {
		return err
	}
	artifactsDir := cmd.String("artifacts-dir")
	if artifactsDir == "" {
		artifactsDir = ".harness/runs"
	}
	transcript, err := src.Write(artifactsDir, artifacts.NewRedactor(apiKeyFromEnv(), string(runKey())))
	if err != nil {
		return err
	}
	set := func(name, value string) error {
		if value == "" || cmd.IsSet(name) {
			return nil
		}
		return cmd.Set(name, value)
	}
	if err := set("workspace", src.Workspace); err != nil {
		return err
	}
	if !cmd.IsSet("skills-root") {
		for _, r := range src.Roots {
			if err := cmd.Set("skills-root", r); err != nil {
				return err
			}
		}
	}
	for name, v := range map[string]string{"model": src.Manifest.Inputs.Model, "base-url": src.Manifest.Inputs.BaseURL, "wire-api": src.Manifest.Inputs.WireAPI} {
		if err := set(name, v); err != nil {
			return err
		}
	}
	for name, v := range map[string]string{"prompt": reflection.Prompt, "prompt-role": "direct-command", "allow-tool": "create_skill", "attach": transcript} {
		if err := cmd.Set(name, v); err != nil {
			return err
		}
	}
	ro, err := resolveOptions(cmd, runOptions)
	if err != nil {
		return err
	}
	ro.values["learned-from"] = src.RunID
	_, err = runResolved(ctx, cmd, ro)
	return err
}

// reflectAfter is `harness run --reflect`: once the run succeeded, the
// same reflection harness reflect runs, in this process. A cassette FILE
// of the run becomes FILE's .reflect.jsonl sibling for the reflection.
// The run's own exit code stands; a reflection that fails is said on
// stderr.
func reflectAfter(ctx context.Context, cmd *cli.Command, ro *resolvedOptions, res *run.Result) {
	args := []string{"harness", "reflect", res.RunDir, "--artifacts-dir", ro.str("artifacts-dir"), "--approve-created", ro.str("approve-created")}
	for _, f := range []string{"record", "replay"} {
		if v := ro.str(f); v != "" {
			args = append(args, "--"+f, strings.TrimSuffix(v, ".jsonl")+".reflect.jsonl")
		}
	}
	for _, f := range []string{"store", "forge-root", "forge-min-pass-rate", "sandbox", "script-memory-limit"} {
		if v := ro.str(f); v != "" {
			args = append(args, "--"+f, v)
		}
	}
	if ro.boolean("quiet") {
		args = append(args, "--quiet")
	}
	w := cmd.Root().ErrWriter
	fmt.Fprintf(w, "harness: reflecting on run %s (--reflect)\n", res.RunID)
	// The answer of the run is what stdout carries; the reflection's goes
	// to stderr.
	if code := Main(args, strings.NewReader(""), w, w); code != outcome.ExitOK {
		fmt.Fprintf(w, "harness: the reflection on run %s ended with exit %d; the run's own result stands\n", res.RunID, code)
	}
}

func apiKeyFromEnv() string {
	if k := os.Getenv("HARNESS_API_KEY"); k != "" {
		return k
	}
	return os.Getenv("OPENAI_API_KEY")
}
