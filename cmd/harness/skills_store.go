package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v3"

	"github.com/harness-dev/harness/internal/termsafe"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/store"
)

// The skill store's operator commands: only a person (or a CI step acting
// for one) approves, rejects, rolls back or removes; no tool can.

func storeFlag() cli.Flag {
	return &cli.StringFlag{Name: "store", Usage: "skill store `DIR`: every version kept, with history and audit log", Value: store.DefaultStoreDir, Sources: cli.EnvVars("HARNESS_SKILLS_STORE")}
}

func openStore(cmd *cli.Command) (*store.Store, error) {
	return store.Open(cmd.String("store"), runKey())
}

func operator(cmd *cli.Command) record.Actor {
	return record.Actor{Kind: "operator", Command: "harness skills " + cmd.Name}
}

// nameAndVersion reads NAME or NAME@VERSION.
func nameAndVersion(cmd *cli.Command, verb string) (string, string, error) {
	if cmd.NArg() != 1 {
		return "", "", usagef(fmt.Sprintf("harness skills %s takes exactly one NAME or NAME@VERSION", verb))
	}
	name, version, _ := strings.Cut(cmd.Args().First(), "@")
	return name, version, nil
}

func skillsVersionsCommand() *cli.Command {
	return &cli.Command{
		Name:      "versions",
		Usage:     "list every stored version of a skill, newest last, with who made it and its state",
		UsageText: "harness skills versions NAME [--store DIR] [--json]",
		Flags:     []cli.Flag{storeFlag(), &cli.BoolFlag{Name: "json", Usage: "print the history as JSON"}},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			name, _, err := nameAndVersion(cmd, "versions")
			if err != nil {
				return err
			}
			st, err := openStore(cmd)
			if err != nil {
				return err
			}
			h, err := st.History(name)
			if err != nil {
				return err
			}
			if len(h.Versions) == 0 {
				return outcome.Usage("skill_not_in_store", "the store %s has no versions of %s", st.Dir, name)
			}
			w := cmd.Root().Writer
			if cmd.Bool("json") {
				return writeJSONTo(w, h)
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			evals := slices.ContainsFunc(h.Versions, func(v record.SkillVersion) bool { return v.Eval != nil })
			fmt.Fprintln(tw, "VERSION\tSTATE\tRISK\t"+passRateHead(evals)+"CREATED\tMADE BY\tPARENT")
			for _, v := range h.Versions {
				mark := ""
				if v.Version == h.Current && v.State == record.VersionLive {
					mark = " (current)"
				}
				fmt.Fprintf(tw, "%s\t%s%s\t%s\t%s%s\t%s\t%s\n", shortDigest(v.Version), v.State, mark, v.Risk, passRateCell(evals, v.Eval),
					v.CreatedAt.Format("2006-01-02 15:04:05"), actorText(v.MadeBy), shortDigest(v.Parent))
			}
			return tw.Flush()
		},
	}
}

// A PASS RATE column is shown only when a version listed has one (a
// SkillForge draft held to --forge-min-pass-rate): a version's eval is
// with_skill's mean pass rate over n cells and the bound, "-" without one.
func passRateHead(shown bool) string {
	if !shown {
		return ""
	}
	return "PASS RATE\t"
}

func passRateCell(shown bool, e *record.SkillEval) string {
	switch {
	case !shown:
		return ""
	case e == nil:
		return "-\t"
	case e.PassRate == nil:
		return fmt.Sprintf("none (min %g)\t", e.MinPassRate)
	}
	return fmt.Sprintf("%.2f n=%d (min %g)\t", *e.PassRate, e.N, e.MinPassRate)
}

func actorText(a record.Actor) string {
	if a.Kind == "run" {
		s := fmt.Sprintf("run %s turn %d", a.RunID, a.Turn)
		if a.LearnedFrom != "" {
			s += ", learned from run " + a.LearnedFrom
		}
		return s
	}
	return a.Command
}

func shortDigest[D ~string](d D) string {
	h := strings.TrimPrefix(string(d), "blake3:")
	if len(h) > 12 {
		return h[:12]
	}
	if h == "" {
		return "-"
	}
	return h
}

func skillsRollbackCommand() *cli.Command {
	return &cli.Command{
		Name:      "rollback",
		Usage:     "make an earlier version of a skill live again (default: the one the current version replaced)",
		UsageText: "harness skills rollback NAME [VERSION] [--store DIR]",
		Flags:     []cli.Flag{storeFlag()},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.NArg() < 1 || cmd.NArg() > 2 {
				return usagef("harness skills rollback takes NAME and optionally VERSION (a digest or its first characters)")
			}
			st, err := openStore(cmd)
			if err != nil {
				return err
			}
			name := cmd.Args().Get(0)
			v, err := st.Rollback(ctx, name, cmd.Args().Get(1), operator(cmd))
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.Root().Writer, "%s is back at %s (was %s)\n", name, v.Version, shortDigest(v.Parent))
			return nil
		},
	}
}

func skillsRemoveCommand() *cli.Command {
	return &cli.Command{
		Name:      "remove",
		Usage:     "take a skill out of its live root; its versions and history stay (rollback brings it back)",
		UsageText: "harness skills remove NAME [--store DIR]",
		Flags:     []cli.Flag{storeFlag()},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			name, _, err := nameAndVersion(cmd, "remove")
			if err != nil {
				return err
			}
			st, err := openStore(cmd)
			if err != nil {
				return err
			}
			if err := st.Remove(ctx, name, operator(cmd)); err != nil {
				return err
			}
			fmt.Fprintf(cmd.Root().Writer, "removed %s (history kept: harness skills versions %s)\n", name, name)
			return nil
		},
	}
}

func skillsPendingCommand() *cli.Command {
	return &cli.Command{
		Name:      "pending",
		Usage:     "list skill versions waiting for approval",
		UsageText: "harness skills pending [--store DIR] [--json]",
		Flags:     []cli.Flag{storeFlag(), &cli.BoolFlag{Name: "json", Usage: "print JSON"}},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.NArg() > 0 {
				return usagef("harness skills pending takes no arguments")
			}
			st, err := openStore(cmd)
			if err != nil {
				return err
			}
			ps, err := st.Pending()
			if err != nil {
				return err
			}
			w := cmd.Root().Writer
			if cmd.Bool("json") {
				return writeJSONTo(w, ps)
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			evals := slices.ContainsFunc(ps, func(p store.PendingVersion) bool { return p.Eval != nil })
			fmt.Fprintln(tw, "NAME\tVERSION\tRISK\t"+passRateHead(evals)+"CREATED\tMADE BY")
			for _, p := range ps {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s%s\t%s\n", p.Name, shortDigest(p.Version), p.Risk, passRateCell(evals, p.Eval), p.CreatedAt.Format("2006-01-02 15:04:05"), actorText(p.MadeBy))
			}
			tw.Flush()
			// Why a version whose evals held it back waits, and where
			// the eval is, for the person about to decide.
			for _, p := range ps {
				if e := p.Eval; e != nil && !e.Met {
					fmt.Fprintf(w, "%s@%s: %s", p.Name, shortDigest(p.Version), termsafe.Escape(e.Reason))
					if e.Dir != "" {
						fmt.Fprintf(w, " (eval: %s)", e.Dir)
					}
					fmt.Fprintln(w)
				}
			}
			fmt.Fprintf(cmd.Root().ErrWriter, "%d pending\n", len(ps))
			return nil
		},
	}
}

func skillsDecideCommand(approve bool) *cli.Command {
	verb, usage := "approve", "approve a pending skill version: it becomes live, and skills.lock.json pins it"
	flags := []cli.Flag{storeFlag(), &cli.StringFlag{Name: "reason", Usage: "why, as `TEXT` for the audit log"}}
	if !approve {
		verb, usage = "reject", "reject a pending skill version; it is kept, never live"
	}
	return &cli.Command{
		Name:      verb,
		Usage:     usage,
		UsageText: "harness skills " + verb + " NAME[@VERSION] [--reason TEXT] [--store DIR]\n\nWithout @VERSION: the newest pending version of NAME.",
		Flags:     flags,
		Action: func(ctx context.Context, cmd *cli.Command) error {
			name, version, err := nameAndVersion(cmd, verb)
			if err != nil {
				return err
			}
			if !approve && cmd.String("reason") == "" {
				return usagef("harness skills reject needs --reason: the audit log records why")
			}
			st, err := openStore(cmd)
			if err != nil {
				return err
			}
			v, err := st.Decide(ctx, name, version, approve, cmd.String("reason"), operator(cmd))
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.Root().Writer, "%s@%s %s\n", name, shortDigest(v.Version), v.State)
			return nil
		},
	}
}

func skillsAuditVerifyCommand() *cli.Command {
	return &cli.Command{
		Name:      "verify",
		Usage:     "check the skill store's audit log: every line chained, sealed with HARNESS_RUN_KEY when set, none removed",
		UsageText: "harness skills audit verify [--store DIR]\n\nExit 0 when it verifies; exit 5 naming the first bad line when not.",
		Flags:     []cli.Flag{storeFlag()},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.NArg() > 0 {
				return usagef("harness skills audit verify takes no arguments")
			}
			st, err := openStore(cmd)
			if err != nil {
				return err
			}
			n, err := store.VerifyAudit(st.Dir, st.Key)
			var ae *store.AuditError
			if errors.As(err, &ae) {
				return outcome.Policy("skills_audit_broken", "%v", ae)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.Root().Writer, "%s: %d lines verify\n", record.FileSkillsAudit, n)
			return nil
		},
	}
}
