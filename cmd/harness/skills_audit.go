package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v3"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/audit"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/skills"
)

func skillsAuditCommand() *cli.Command {
	return &cli.Command{
		Name:  "audit",
		Usage: "scan a skill for injection-like and dangerous content; exit 1 on a critical finding",
		UsageText: "harness skills audit NAME --skills-root DIR [--json]\n" +
			"harness skills audit PATH [--json]      (a skill directory)\n\n" +
			"Rules have stable ids naming their family, e.g. prompt-injection.override,\n" +
			"exfiltration.webhook, obfuscation.base64-shell, hidden.unicode-tags.\n\n" +
			"harness skills audit verify checks the skill store's audit log instead.",
		Flags:    append(scanFlags(), &cli.BoolFlag{Name: "json", Usage: "print the findings as JSON"}),
		Commands: []*cli.Command{skillsAuditVerifyCommand()},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.NArg() != 1 {
				return usagef("harness skills audit takes exactly one skill NAME or directory PATH (or: harness skills audit verify)")
			}
			arg := cmd.Args().First()
			var s *skills.Skill
			if fi, err := os.Stat(filepath.Join(arg, "SKILL.md")); err == nil && fi.Mode().IsRegular() {
				dir, err := realDir(arg, "audit")
				if err != nil {
					return err
				}
				reg, err := skills.Scan(ctx, skills.ScanOptions{Roots: []string{filepath.Dir(dir)}})
				if err != nil {
					return usagef(fmt.Sprintf("audit %s: %v", arg, err))
				}
				for i := range reg.Skills {
					if reg.Skills[i].SkillDir == dir {
						s = &reg.Skills[i]
					}
				}
				if s == nil {
					return usagef(fmt.Sprintf("audit %s: not a loadable skill (run harness skills validate %s)", arg, arg))
				}
			} else {
				var err error
				if s, err = lookupOne(ctx, cmd, "audit"); err != nil {
					return err
				}
			}
			findings := audit.Skill(s)
			critical := false
			for _, f := range findings {
				critical = critical || f.Severity == "critical"
			}
			w := cmd.Root().Writer
			if cmd.Bool("json") {
				if findings == nil {
					findings = []record.Finding{}
				}
				if err := writeJSONTo(w, struct {
					artifacts.Envelope
					Skill    string           `json:"skill"`
					Critical bool             `json:"critical"`
					Findings []record.Finding `json:"findings"`
				}{artifacts.NewEnvelope("harness.skill-audit", 1), s.Name, critical, findings}); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(w, "%s: %d findings\n", s.Name, len(findings))
				for _, f := range findings {
					loc := f.Path
					if f.Line > 0 {
						loc = fmt.Sprintf("%s:%d", f.Path, f.Line)
					}
					fmt.Fprintf(w, "  %s %s (%s): %s\n", f.Severity, f.Rule, loc, f.Match)
					if f.Hidden != "" {
						fmt.Fprintf(w, "    hidden text: %s\n", f.Hidden)
					}
				}
			}
			if critical {
				return reported(outcome.ExitFailed, "critical findings")
			}
			return nil
		},
	}
}
