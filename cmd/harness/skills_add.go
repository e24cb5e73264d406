package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/harness-dev/harness/gitsource"
	"github.com/harness-dev/harness/store"
)

// gitSkillFlags are what add and update share: where, trusted how, and
// how far a new version goes without a person.
func gitSkillFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "to", Usage: "skills root `DIR` (holding skills.lock.json)", Sources: cli.EnvVars("HARNESS_SKILLS_ROOT")},
		&cli.StringSliceFlag{Name: "skill", Usage: "take only skill `NAME` (repeatable)"},
		&cli.StringFlag{Name: "approve-installed", Usage: "the highest risk `TIER` made live at once (minimal, low, moderate, or none: every version waits for harness skills approve)", Value: "low", Sources: cli.EnvVars("HARNESS_APPROVE_INSTALLED")},
		&cli.BoolFlag{Name: "allow-risky", Usage: "install despite critical content findings"},
		configFlag("skills.trustedSources (URL prefixes and directories)"),
		storeFlag(),
	}
}

func skillsAddCommand() *cli.Command {
	return &cli.Command{
		Name:  "add",
		Usage: "add skills from a git repository, pinned to a commit in skills.lock.json (no SOURCE: install exactly what the lock pins)",
		UsageText: "harness skills add SOURCE --to ROOT [--skill NAME]... [--approve-installed TIER] [--config FILE]\n" +
			"   harness skills add --to ROOT                (what ROOT/skills.lock.json pins)\n\n" +
			"SOURCE is a git repository: https://, ssh://, file:// or owner/repo (GitHub), with an optional\n" +
			"#path/in/repo and @ref (tag, branch or commit; default: the default branch), e.g.\n" +
			"    harness skills add acme/skills#pdf@v1.2 --to .agents/skills\n" +
			"It must lie under a trusted source in the config file:\n\n" +
			"    skills:\n      trustedSources: [https://github.com/acme/, /srv/git]\n\n" +
			"The repository is fetched (no git binary needed), the ref resolved to a commit, and every\n" +
			"skill in that tree (or only --skill NAME) goes through the skill store as harness skills\n" +
			"install does: unpacked safely, validated strictly, scanned. A version whose risk is above\n" +
			"--approve-installed, or one that asks for more than the live version had, waits for harness\n" +
			"skills approve. skills.lock.json records the URL, the ref, the commit, the path and the tree\n" +
			"digest: without SOURCE, add installs exactly those (the one skill each entry names, the\n" +
			"same bytes, or an error when a commit is gone; never over a skill the store did not\n" +
			"install) and says which refs moved since. The lock follows what is live: approve,\n" +
			"rollback and remove rewrite it.",
		Flags: gitSkillFlags(),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.NArg() > 1 {
				return usagef("harness skills add takes at most one SOURCE")
			}
			o, err := gitOptions(cmd)
			if err != nil {
				return err
			}
			ao := store.AddOptions{Root: o.Root, Skills: o.Skills, TrustedSources: o.TrustedSources, Approve: o.Approve, AllowRisky: o.AllowRisky, Store: o.Store}
			if cmd.NArg() == 1 {
				if ao.Source, err = gitsource.Parse(cmd.Args().First()); err != nil {
					return usagef(err.Error())
				}
			}
			added, err := store.Add(ctx, ao)
			if err != nil {
				return explainTrust(err, o.Config)
			}
			w := cmd.Root().Writer
			if len(added.Skills) == 0 {
				fmt.Fprintf(w, "%s/skills.lock.json pins no skill from git: nothing to install (give a SOURCE to add one)\n", ao.Root)
			}
			for _, a := range added.Skills {
				if a.UpToDate {
					fmt.Fprintf(w, "%s: up to date at %s\n", a.Name, shortCommit(a.Commit))
					continue
				}
				printPlaced(w, a.Installed, a.Commit)
			}
			for _, m := range added.Moved {
				fmt.Fprintf(w, "%s: %s now names %s, not the pinned %s (harness skills update %s takes it)\n", m.Skill, refName(m.Ref), shortCommit(m.Now), shortCommit(m.Pinned), m.Skill)
			}
			return nil
		},
	}
}

func skillsOutdatedCommand() *cli.Command {
	return &cli.Command{
		Name:  "outdated",
		Usage: "list the skills added from git whose ref names another commit now",
		UsageText: "harness skills outdated --to ROOT [--skill NAME]... [--config FILE] [--json]\n\n" +
			"Only a URL under a trusted source in the config file is asked, as add and update do.\n" +
			"Exit code 0 either way; the list is empty when every pin is current.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "to", Usage: "skills root `DIR` (holding skills.lock.json)", Sources: cli.EnvVars("HARNESS_SKILLS_ROOT")},
			&cli.StringSliceFlag{Name: "skill", Usage: "only skill `NAME` (repeatable)"},
			&cli.BoolFlag{Name: "json", Usage: "print JSON"},
			configFlag("skills.trustedSources (URL prefixes and directories)"),
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.NArg() > 0 {
				return usagef("harness skills outdated takes no arguments (name skills with --skill)")
			}
			if cmd.String("to") == "" {
				return usagef("harness skills outdated needs --to ROOT, the skills root whose skills.lock.json to check")
			}
			cf, err := findConfig(cmd)
			if err != nil {
				return err
			}
			trusted, err := cf.trustedSources()
			if err != nil {
				return err
			}
			moves, err := store.Outdated(ctx, cmd.String("to"), cmd.StringSlice("skill"), trusted)
			if err != nil {
				return explainTrust(err, cf)
			}
			if moves == nil {
				moves = []store.RefMove{}
			}
			if cmd.Bool("json") {
				return writeJSONTo(cmd.Root().Writer, moves)
			}
			w := cmd.Root().Writer
			if len(moves) == 0 {
				fmt.Fprintln(w, "every skill added from git is at the commit its ref names")
			}
			for _, m := range moves {
				now := shortCommit(m.Now)
				if m.Now == "" {
					now = "nothing (the ref is gone)"
				}
				fmt.Fprintf(w, "%s\t%s\t%s -> %s\t%s\n", m.Skill, refName(m.Ref), shortCommit(m.Pinned), now, m.URL)
			}
			return nil
		},
	}
}

func skillsUpdateCommand() *cli.Command {
	return &cli.Command{
		Name:  "update",
		Usage: "take skills added from git to what their refs name now; a version that asks for more waits for a person",
		UsageText: "harness skills update [NAME]... --to ROOT [--dry-run] [--approve-installed TIER]\n\n" +
			"For each skill (every git-pinned one without NAME) whose ref moved, shows the files added,\n" +
			"removed and changed, the risk before and after and the permissions it newly asks for, then\n" +
			"places the new version through the store: live when within --approve-installed and asking\n" +
			"for nothing new, otherwise pending (harness skills approve NAME). --dry-run only shows.",
		Flags: append(gitSkillFlags(), &cli.BoolFlag{Name: "dry-run", Usage: "show what would change; install nothing"}),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			o, err := gitOptions(cmd)
			if err != nil {
				return err
			}
			names := append(cmd.Args().Slice(), o.Skills...)
			ups, err := store.Update(ctx, store.UpdateOptions{Root: o.Root, Skills: names, DryRun: cmd.Bool("dry-run"), TrustedSources: o.TrustedSources,
				Approve: o.Approve, AllowRisky: o.AllowRisky, Store: o.Store})
			if err != nil {
				return explainTrust(err, o.Config)
			}
			w := cmd.Root().Writer
			for _, u := range ups {
				if u.UpToDate {
					fmt.Fprintf(w, "%s: up to date at %s (%s)\n", u.Name, shortCommit(u.To), refName(u.Ref))
					continue
				}
				in := u.Installed
				fmt.Fprintf(w, "%s: %s %s -> %s\n", u.Name, refName(u.Ref), shortCommit(u.From), shortCommit(u.To))
				if c := in.Changes; c != nil {
					for _, f := range c.Added {
						fmt.Fprintf(w, "  + %s\n", f)
					}
					for _, f := range c.Removed {
						fmt.Fprintf(w, "  - %s\n", f)
					}
					for _, f := range c.Changed {
						fmt.Fprintf(w, "  ~ %s\n", f)
					}
				}
				before := "unknown"
				if u.RiskBefore != nil {
					before = u.RiskBefore.String()
				}
				fmt.Fprintf(w, "  risk: %s -> %s\n", before, in.Risk)
				if len(u.NewPermissions) > 0 {
					fmt.Fprintf(w, "  new permissions: %s\n", strings.Join(u.NewPermissions, ", "))
				}
				switch {
				case u.DryRun && in.Pending:
					fmt.Fprintln(w, "  would wait for a person (harness skills approve)")
				case u.DryRun:
					fmt.Fprintln(w, "  would go live")
				default:
					printPlaced(w, in, u.To)
				}
			}
			return nil
		},
	}
}

type gitCommandOptions struct {
	Root           string
	Skills         []string
	TrustedSources []string
	Approve        store.Approval
	AllowRisky     bool
	Store          *store.Store
	// Config is the config file read, which refusals of an untrusted
	// source name.
	Config *configFile
}

func gitOptions(cmd *cli.Command) (gitCommandOptions, error) {
	o := gitCommandOptions{Root: cmd.String("to"), Skills: cmd.StringSlice("skill"), AllowRisky: cmd.Bool("allow-risky")}
	if o.Root == "" {
		return o, usagef("harness skills " + cmd.Name + " needs --to ROOT, the skills root to install into (it holds skills.lock.json)")
	}
	var err error
	if o.Approve, err = store.ParseApproval("--approve-installed", cmd.String("approve-installed")); err != nil {
		return o, err
	}
	if o.Config, err = findConfig(cmd); err != nil {
		return o, err
	}
	if o.TrustedSources, err = o.Config.trustedSources(); err != nil {
		return o, err
	}
	o.Store, err = openStore(cmd)
	return o, err
}

func printPlaced(w io.Writer, in *store.Installed, commit string) {
	if in.Pending {
		fmt.Fprintf(w, "%s: version %s from %s is pending (risk %s): harness skills approve %s makes it live\n", in.Name, shortDigest(in.Version), shortCommit(commit), in.Risk, in.Name)
		return
	}
	fmt.Fprintf(w, "added %s at %s from %s (risk %s, version %s)\n", in.Name, in.Dir, shortCommit(commit), in.Risk, shortDigest(in.Version))
	for _, f := range in.Findings {
		fmt.Fprintf(w, "  finding: %s %s (%s:%d): %s\n", f.Severity, f.Rule, f.Path, f.Line, f.Match)
	}
	for _, h := range in.InstallHints {
		fmt.Fprintf(w, "  needs: %s\n", h)
	}
}

func refName(ref string) string {
	if ref == "" {
		return "the default branch"
	}
	return ref
}

func shortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}
