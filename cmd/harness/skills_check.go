package main

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v3"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/outcome"
)

func skillsCheckCommand() *cli.Command {
	return &cli.Command{
		Name:  "check",
		Usage: "check which skills this machine can run; with NAME, exit 1 when that skill cannot",
		UsageText: "harness skills check [NAME] --skills-root DIR [--json]\n\n" +
			"Requirements come from frontmatter metadata.openclaw (or metadata.clawdbot, or\n" +
			"metadata.requires): bins (all on PATH), anyBins (one on PATH), env (set, non-empty), os.",
		Flags: append(scanFlags(), &cli.BoolFlag{Name: "json", Usage: "print the report as JSON"}),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.NArg() > 1 {
				return usagef("harness skills check takes at most one skill NAME")
			}
			reg, err := scanRoots(ctx, cmd)
			if err != nil {
				return err
			}
			rep := eligibilityReport{Envelope: artifacts.NewEnvelope("harness.skill-eligibility", 1), Skills: []eligibilityItem{}}
			name := cmd.Args().First()
			if name != "" {
				if _, ok := reg.Lookup(name); !ok {
					code, msg := reg.WhyMissing(name)
					return &outcome.Error{Code: code, Msg: msg, Exit: outcome.ExitUsage}
				}
			}
			for _, s := range reg.Skills {
				if s.ShadowedBy != "" || name != "" && s.Name != name {
					continue
				}
				rep.Total++
				it := eligibilityItem{Name: s.Name, Eligible: s.IsEligible(), Missing: s.Missing, InstallHints: s.InstallHints}
				if it.Eligible {
					rep.Eligible++
					it.Missing = nil
				} else {
					rep.Ineligible++
				}
				rep.Skills = append(rep.Skills, it)
			}
			w := cmd.Root().Writer
			if cmd.Bool("json") {
				if err := writeJSONTo(w, rep); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(w, "%d skills: %d eligible, %d ineligible\n", rep.Total, rep.Eligible, rep.Ineligible)
				for _, it := range rep.Skills {
					if it.Eligible {
						continue
					}
					s, _ := reg.Lookup(it.Name)
					fmt.Fprintf(w, "\n%s:", it.Name)
					printEligibility(w, s)
				}
			}
			if name != "" && rep.Ineligible > 0 {
				return reported(outcome.ExitFailed, "skill "+name+" is not eligible on this machine")
			}
			return nil
		},
	}
}
