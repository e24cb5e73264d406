package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/harness-dev/harness/internal/termsafe"
	"github.com/harness-dev/harness/kube"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/schedule"
	"github.com/harness-dev/harness/skills"
)

func scheduleCommand() *cli.Command {
	return &cli.Command{
		Name:  "schedule",
		Usage: "list the skills that declare a schedule, and print them for Kubernetes or GitHub Actions",
		Description: "A skill declares metadata.harness.schedule: {cron: \"0 7 * * 1-5\", prompt: \"...\",\n" +
			"timezone: \"UTC\"}. harness is a batch command, not a daemon: the schedules run on the\n" +
			"schedulers you already have, as CronJobs (schedule k8s) or a workflow (schedule github),\n" +
			"each a plain harness run of the skill with its prompt.",
		Commands: []*cli.Command{scheduleListCommand(), scheduleK8sCommand(), scheduleGitHubCommand()},
	}
}

// scheduledSkills scans the roots and reads every schedule; one that
// cannot be read is a usage error naming it.
func scheduledSkills(ctx context.Context, cmd *cli.Command) ([]*schedule.Entry, error) {
	if cmd.NArg() > 0 {
		return nil, usagef(fmt.Sprintf("unexpected argument %q: give roots with --skills-root", cmd.Args().First()))
	}
	reg, err := scanRoots(ctx, cmd)
	if err != nil {
		return nil, err
	}
	// A skill that does not load is in no registry: its schedule would
	// be left out of what is printed without a word.
	for _, d := range reg.Diagnostics {
		if d.Severity == skills.SeverityError && strings.EqualFold(filepath.Base(d.Path), "SKILL.md") {
			fmt.Fprintf(cmd.Root().ErrWriter, "harness: warning: skill %s does not load, so no schedule it declares is printed: %s: %s (%s)\n",
				termsafe.Escape(filepath.Base(filepath.Dir(d.Path))), termsafe.Escape(d.Path), termsafe.Escape(d.Detail), d.Code)
		}
	}
	entries, errs := schedule.Entries(reg)
	if len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = e.Error()
		}
		return nil, usagef(strings.Join(msgs, "; "))
	}
	return entries, nil
}

func scheduleListCommand() *cli.Command {
	return &cli.Command{
		Name:      "list",
		Usage:     "print every scheduled skill with its next three run times",
		UsageText: "harness schedule list --skills-root DIR [--from TIME] [--json]",
		Flags: append(scanFlags(),
			&cli.StringFlag{Name: "from", Usage: "list the runs after `TIME` (RFC 3339, e.g. 2026-12-01T00:00:00Z)", DefaultText: "now"},
			&cli.BoolFlag{Name: "json", Usage: "print JSON instead of a table"}),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			from := time.Now()
			if f := cmd.String("from"); f != "" {
				t, err := time.Parse(time.RFC3339, f)
				if err != nil {
					return usagef(fmt.Sprintf("--from %q: give a time such as 2026-12-01T07:00:00Z", f))
				}
				from = t
			}
			entries, err := scheduledSkills(ctx, cmd)
			if err != nil {
				return err
			}
			type listed struct {
				*schedule.Entry
				Next []time.Time `json:"next"`
			}
			out := []listed{}
			for _, e := range entries {
				out = append(out, listed{e, e.Next(from, 3)})
			}
			w := cmd.Root().Writer
			if cmd.Bool("json") {
				return writeJSONTo(w, out)
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SKILL\tCRON\tTIMEZONE\tNEXT RUNS\tPROMPT")
			for _, l := range out {
				var next []string
				for _, n := range l.Next {
					next = append(next, n.Format("2006-01-02 15:04"))
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", l.Skill, l.Cron, l.Timezone, strings.Join(next, ", "), firstLine(l.Prompt, 60))
			}
			return tw.Flush()
		},
	}
}

func scheduleK8sCommand() *cli.Command {
	return &cli.Command{
		Name:      "k8s",
		Usage:     "print a Kubernetes CronJob per scheduled skill",
		UsageText: "harness schedule k8s --skills-root DIR --image IMG --secret NAME --model NAME [--runs-claim PVC] ...",
		Description: "Each CronJob (batch/v1, concurrencyPolicy Forbid, the skill's time zone) runs harness\n" +
			"run with the skill preloaded and its schedule's prompt, in a pod at\n" +
			"the restricted Pod Security level, the key read from the Secret by reference, the run\n" +
			"directories under /runs/<skill> (mount a PersistentVolumeClaim there with --runs-claim).\n" +
			"--skills-root is scanned here and passed as given: paths relative to --workdir in the image.\n" +
			"--model (or HARNESS_MODEL) is required: it is written into every job (exit 2 without).",
		Flags: append(append(scanFlags(),
			&cli.StringFlag{Name: "image", Usage: "container `IMAGE` holding harness, the workspace and its skills"},
			&cli.StringFlag{Name: "runs-claim", Usage: "PersistentVolumeClaim `NAME` mounted at /runs"},
		), slices.Concat(clusterFlags("CronJobs", "the workspace"), podFlags("a scheduled run's Job"), unitFlags(scheduledRunSettings(), ""))...),
		Action: printSchedules(func(entries []*schedule.Entry, args []string, cmd *cli.Command) ([]byte, error) {
			return schedule.K8s(entries, schedule.K8sOptions{
				Image: cmd.String("image"), Secret: cmd.String("secret"), SecretKey: cmd.String("secret-key"), RunsClaim: cmd.String("runs-claim"),
				Namespace: cmd.String("namespace"), WorkDir: cmd.String("workdir"), SkillsRoots: cmd.StringSlice("skills-root"),
				Args: args, Pod: podFrom(cmd),
			})
		}),
	}
}

func scheduleGitHubCommand() *cli.Command {
	return &cli.Command{
		Name:      "github",
		Usage:     "print a GitHub Actions workflow that runs every scheduled skill at its cron",
		UsageText: "harness schedule github --skills-root DIR --model NAME [--secret NAME] ... > .github/workflows/harness-schedules.yml",
		Description: "One workflow: on schedule (every skill's cron) and workflow_dispatch; one job per skill,\n" +
			"which runs only at its own cron (or by hand): install harness and bubblewrap, run the skill\n" +
			"with its prompt, summarise result.json into the job summary, upload the run directory.\n" +
			"The key comes from the repository secret --secret (default OPENAI_API_KEY).\n" +
			"--model (or HARNESS_MODEL) is required: it is written into every job (exit 2 without).",
		Flags: append(append(scanFlags(),
			&cli.StringFlag{Name: "secret", Usage: "repository secret `NAME` holding the API key", Value: "OPENAI_API_KEY"},
		), unitFlags(scheduledRunSettings(), "")...),
		Action: printSchedules(func(entries []*schedule.Entry, args []string, cmd *cli.Command) ([]byte, error) {
			return schedule.GitHub(entries, schedule.GitHubOptions{SkillsRoots: cmd.StringSlice("skills-root"), Args: args, Secret: cmd.String("secret")})
		}),
	}
}

// printSchedules is the action of a command that prints the scheduled
// skills for a scheduler: render gets them and the run settings as flags.
func printSchedules(render func(entries []*schedule.Entry, args []string, cmd *cli.Command) ([]byte, error)) cli.ActionFunc {
	return func(ctx context.Context, cmd *cli.Command) error {
		entries, err := scheduledSkills(ctx, cmd)
		if err != nil {
			return err
		}
		args, err := unitArgsOf(cmd, scheduledRunSettings())
		if err != nil {
			return err
		}
		b, err := render(entries, args, cmd)
		if err != nil {
			return err
		}
		// A scheduled run has only what the printed job gives it: without
		// a model every run of every job would exit 2. Checked after the
		// skills and the scheduler's own options, which say more.
		if !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--model=") }) {
			return &outcome.Error{Code: "model_missing", Exit: outcome.ExitUsage,
				Msg: "no model for the scheduled runs: pass --model NAME (or set HARNESS_MODEL) and it is written into every job; nothing was printed"}
		}
		_, err = cmd.Root().Writer.Write(b)
		return err
	}
}

// scheduledRunSettings are the run settings a scheduled run takes: the
// unit settings but the roots, which --skills-root already names.
func scheduledRunSettings() []string {
	var out []string
	for _, n := range unitSettings {
		if n != "skills-root" && n != "external-skills-root" {
			out = append(out, n)
		}
	}
	return out
}

// checkSchedule is `skills validate`'s check of a declared schedule.
func checkSchedule(s *skills.Skill) []skills.Diagnostic {
	if _, err := schedule.Of(s); err != nil {
		return []skills.Diagnostic{{Severity: skills.SeverityError, Code: "schedule-invalid", Detail: err.Error(), Path: s.SkillPath}}
	}
	return nil
}

func firstLine(s string, n int) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(line); len(r) > n {
		return string(r[:n]) + "..."
	}
	return line
}

// podFlags size and bound the pods of a printed manifest; job says which
// Job --deadline ends.
func podFlags(job string) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "cpu", Usage: "CPU each pod requests (`QUANTITY`, e.g. 500m or 2); also its limit unless --cpu-limit and --memory-limit are given"},
		&cli.StringFlag{Name: "memory", Usage: "memory each pod requests (`QUANTITY`, e.g. 2Gi); also its limit unless --cpu-limit and --memory-limit are given"},
		&cli.StringFlag{Name: "cpu-limit", Usage: "CPU limit of each pod (`QUANTITY`), with --memory-limit"},
		&cli.StringFlag{Name: "memory-limit", Usage: "memory limit of each pod (`QUANTITY`), with --cpu-limit"},
		&cli.DurationFlag{Name: "deadline", Usage: "end " + job + " after `DURATION` (activeDeadlineSeconds)", DefaultText: "none"},
		&cli.DurationFlag{Name: "ttl", Usage: "delete a finished Job after `DURATION` (ttlSecondsAfterFinished)", DefaultText: "24h"},
	}
}

// clusterFlags are what every manifest command takes for its pods: the
// Secret holding the key, the namespace of object, and the workspace
// directory in the image (holding what).
func clusterFlags(object, holding string) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "secret", Usage: "Secret `NAME` holding the API key"},
		&cli.StringFlag{Name: "secret-key", Usage: "`KEY` of the API key in the Secret", Value: "api-key"},
		&cli.StringFlag{Name: "namespace", Usage: "`NAMESPACE` of the " + object},
		&cli.StringFlag{Name: "workdir", Usage: "`DIR` in the image holding " + holding, Value: "/work"},
	}
}

// sandboxProfileFlag is the pods' seccomp profile, for the manifests
// whose pods run skill code.
func sandboxProfileFlag() cli.Flag {
	return &cli.StringFlag{Name: "sandbox-profile", Usage: "the pods' seccomp `PROFILE`: runtime-default (the restricted Pod Security level; harness's sandbox then uses Landlock, since the profile refuses bwrap's user namespace) or unconfined (lets bwrap start; not the restricted level)", Value: "runtime-default"}
}

func podFrom(cmd *cli.Command) kube.Pod {
	return kube.Pod{CPU: cmd.String("cpu"), Memory: cmd.String("memory"), CPULimit: cmd.String("cpu-limit"), MemoryLimit: cmd.String("memory-limit"),
		Deadline: cmd.Duration("deadline"), TTL: cmd.Duration("ttl")}
}
