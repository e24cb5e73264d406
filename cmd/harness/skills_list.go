package main

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/urfave/cli/v3"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/audit"
	"github.com/harness-dev/harness/skills"
)

// skillList is the --json output of `harness skills list`.
type skillList struct {
	artifacts.Envelope
	Digest      artifacts.Digest    `json:"digest"`
	Skills      []skillListEntry    `json:"skills"`
	Diagnostics []skills.Diagnostic `json:"diagnostics"`
}

type skillListEntry struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Root        string `json:"root"`
	SkillPath   string `json:"skillPath"`
	// LinkedFrom is the symbolic link in Root through which the skill was
	// found; SkillPath is then its canonical target.
	LinkedFrom  string           `json:"linkedFrom,omitempty"`
	Digest      artifacts.Digest `json:"digest"`
	ShadowedBy  string           `json:"shadowedBy,omitempty"`
	Eligible    bool             `json:"eligible"`
	Resources   int              `json:"resources"`
	Diagnostics int              `json:"diagnostics"`
	// Risk is the tier from the skill's manifest and content scan.
	Risk skills.Risk `json:"risk"`
}

func skillsListCommand() *cli.Command {
	return &cli.Command{
		Name:      "list",
		Usage:     "list the skills under the roots",
		UsageText: "harness skills list --skills-root DIR [--skills-root DIR]... [--json]",
		Flags: append(scanFlags(), &cli.BoolFlag{Name: "json", Usage: "print JSON instead of a table"},
			&cli.BoolFlag{Name: "eligible", Usage: "only skills whose requirements this machine meets"},
			&cli.BoolFlag{Name: "ineligible", Usage: "only skills whose requirements this machine does not meet"}),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.NArg() > 0 {
				return usagef(fmt.Sprintf("unexpected argument %q: give roots with --skills-root", cmd.Args().First()))
			}
			if cmd.Bool("eligible") && cmd.Bool("ineligible") {
				return usagef("--eligible and --ineligible cannot be used together")
			}
			reg, err := scanRoots(ctx, cmd)
			if err != nil {
				return err
			}
			out := skillList{Envelope: artifacts.NewEnvelope("harness.skill-list", 1), Digest: reg.Digest, Skills: []skillListEntry{}, Diagnostics: reg.Diagnostics}
			for _, s := range reg.Skills {
				if cmd.Bool("eligible") && !s.IsEligible() || cmd.Bool("ineligible") && s.IsEligible() {
					continue
				}
				e := skillListEntry{
					Name: s.Name, Description: s.Description, Root: s.Root, SkillPath: s.SkillPath,
					Digest: s.Digest, ShadowedBy: s.ShadowedBy, Eligible: s.IsEligible(), Resources: len(s.Resources), Diagnostics: len(s.Diagnostics),
					Risk: audit.Assess(&s).Risk,
				}
				if s.LinkedFrom != nil {
					e.Root, e.LinkedFrom = s.LinkedFrom.Root, s.LinkedFrom.Path
				}
				out.Skills = append(out.Skills, e)
			}
			w := cmd.Root().Writer
			if cmd.Bool("json") {
				return writeJSONTo(w, out)
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tDESCRIPTION\tRISK\tROOT\tDIAGNOSTICS")
			for _, s := range out.Skills {
				name := s.Name
				if s.ShadowedBy != "" {
					name += " (shadowed)"
				}
				if !s.Eligible {
					name += " (ineligible)"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\n", name, shorten(s.Description, 60), s.Risk, s.Root, s.Diagnostics)
			}
			tw.Flush()
			// A skill that was not found at all shows up only here: say why,
			// or an empty list looks like an empty root.
			for _, d := range reg.Diagnostics {
				if d.Severity != skills.SeverityInfo {
					fmt.Fprintln(cmd.Root().ErrWriter, formatDiagnostic(d))
				}
			}
			fmt.Fprintf(cmd.Root().ErrWriter, "%d skills, %d registry diagnostics\n", len(out.Skills), len(reg.Diagnostics))
			return nil
		},
	}
}
