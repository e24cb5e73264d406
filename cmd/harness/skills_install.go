package main

import (
	"context"
	"fmt"

	"github.com/harness-dev/harness/store"
	"github.com/urfave/cli/v3"
)

func skillsInstallCommand() *cli.Command {
	return &cli.Command{
		Name:  "install",
		Usage: "install a skill from a local directory or archive, refusing anything unsafe",
		UsageText: "harness skills install SOURCE --to ROOT [--force] [--allow-risky] [--config FILE]\n\n" +
			"SOURCE is a skill directory or a .tar.gz/.tgz/.zip archive of one, under a trusted source\n" +
			"listed in the config file:\n\n" +
			"    skills:\n      trustedSources: [/srv/skills, ./vendor/skills]\n\n" +
			"The skill is unpacked into a staging directory in ROOT, validated (the rules of harness skills validate --strict), scanned\n" +
			"(a critical finding refuses, exit 5, unless --allow-risky), kept in the skill store as a\n" +
			"version named by its digest (see harness skills versions, rollback), swapped into place\n" +
			"atomically and recorded in ROOT/skills.lock.json and the store's audit log. Programs a\n" +
			"skill needs are never installed: the hints are printed.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "to", Usage: "skills root `DIR` to install into", Sources: cli.EnvVars("HARNESS_SKILLS_ROOT")},
			&cli.BoolFlag{Name: "force", Usage: "replace an installed skill of the same name"},
			&cli.BoolFlag{Name: "allow-risky", Usage: "install despite critical content findings"},
			configFlag("skills.trustedSources"),
			storeFlag(),
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.NArg() != 1 {
				return usagef("harness skills install takes exactly one SOURCE (a directory or archive)")
			}
			if cmd.String("to") == "" {
				return usagef("harness skills install needs --to ROOT, the skills root to install into")
			}
			cf, err := findConfig(cmd)
			if err != nil {
				return err
			}
			trustedSources, err := cf.trustedSources()
			if err != nil {
				return err
			}
			st, err := openStore(cmd)
			if err != nil {
				return err
			}
			in, err := store.Install(ctx, store.InstallOptions{
				Source: cmd.Args().First(), Root: cmd.String("to"), TrustedSources: trustedSources,
				Force: cmd.Bool("force"), AllowRisky: cmd.Bool("allow-risky"), Store: st,
			})
			if err != nil {
				return explainTrust(err, cf)
			}
			w := cmd.Root().Writer
			fmt.Fprintf(w, "installed %s at %s (%s)\n", in.Name, in.Dir, in.Digest)
			switch {
			case in.Parent != "" && in.Parent != in.Version:
				fmt.Fprintf(w, "  version %s, replacing %s (harness skills rollback %s goes back)\n", shortDigest(in.Version), shortDigest(in.Parent), in.Name)
			case in.Version != "":
				fmt.Fprintf(w, "  version %s\n", shortDigest(in.Version))
			}
			for _, f := range in.Findings {
				fmt.Fprintf(w, "  finding: %s %s (%s:%d): %s\n", f.Severity, f.Rule, f.Path, f.Line, f.Match)
			}
			for _, h := range in.InstallHints {
				fmt.Fprintf(w, "  needs: %s\n", h)
			}
			return nil
		},
	}
}
