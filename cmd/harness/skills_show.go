package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v3"

	"github.com/harness-dev/harness/audit"
	"github.com/harness-dev/harness/grant"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/skills"
)

func skillsShowCommand() *cli.Command {
	return oneSkillCommand("show", "show one skill: metadata, body size and resources", false)
}

func skillsInfoCommand() *cli.Command {
	return oneSkillCommand("info", "show one skill with its requirements, what this machine lacks and how to install it", true)
}

// oneSkillCommand prints one skill's record; info adds its eligibility.
func oneSkillCommand(verb, usage string, eligibility bool) *cli.Command {
	return &cli.Command{
		Name:      verb,
		Usage:     usage,
		UsageText: "harness skills " + verb + " NAME --skills-root DIR [--json]",
		Flags:     append(scanFlags(), &cli.BoolFlag{Name: "json", Usage: "print the skill's registry record as JSON"}),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			s, err := lookupOne(ctx, cmd, verb)
			if err != nil {
				return err
			}
			w := cmd.Root().Writer
			if cmd.Bool("json") {
				return writeJSONTo(w, s)
			}
			printSkill(w, s)
			if eligibility {
				printEligibility(w, s)
				printAssessment(w, audit.Assess(s))
				if l, err := skills.LimitsOf(s.Frontmatter); err == nil {
					fmt.Fprintf(w, "limits (metadata.harness.limits; they narrow the operator's, never widen them): %s\n", l)
				}
				if t, err := skills.TierOf(s.Frontmatter); err == nil && t != "" {
					fmt.Fprintf(w, "tier (metadata.harness.tier): %s: a child run started with it runs on the model the operator maps to it (--tier %s=MODEL)\n", t, t)
				}
			}
			return nil
		},
	}
}

func printSkill(w io.Writer, s *skills.Skill) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "name:\t%s\n", s.Name)
	fmt.Fprintf(tw, "description:\t%s\n", s.Description)
	fmt.Fprintf(tw, "SKILL.md:\t%s\n", s.SkillPath)
	if s.LinkedFrom != nil {
		fmt.Fprintf(tw, "linked from:\t%s\n", s.LinkedFrom.Path)
	}
	if s.SandboxSkillPath != "" {
		fmt.Fprintf(tw, "sandbox path:\t%s\n", s.SandboxSkillPath)
	}
	fmt.Fprintf(tw, "digest:\t%s\n", s.Digest)
	fmt.Fprintf(tw, "tree digest:\t%s\n", s.TreeDigest)
	if fi, err := os.Stat(s.SkillPath); err == nil {
		fmt.Fprintf(tw, "body:\t%d bytes\n", fi.Size()-int64(s.BodyOffset))
	}
	for _, k := range sortedKeys(s.Frontmatter) {
		if k == "name" || k == "description" {
			continue
		}
		b, _ := json.Marshal(s.Frontmatter[k])
		fmt.Fprintf(tw, "%s:\t%s\n", k, shorten(string(b), 100))
	}
	tw.Flush()
	fmt.Fprintf(w, "\nresources (%d):\n", len(s.Resources))
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, r := range s.Resources {
		extra := r.ContentKind
		if r.Runtime != "" {
			extra += ", " + r.Runtime
		}
		if r.Referenced {
			extra += ", referenced"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%d bytes\t%s\n", r.Path, r.Kind, r.Size, extra)
	}
	tw.Flush()
	if len(s.Diagnostics) > 0 {
		fmt.Fprintf(w, "\ndiagnostics (%d):\n", len(s.Diagnostics))
		for _, d := range s.Diagnostics {
			fmt.Fprintf(w, "  - %s\n", formatDiagnostic(d))
		}
	}
}

func lookupOne(ctx context.Context, cmd *cli.Command, verb string) (*skills.Skill, error) {
	if cmd.NArg() != 1 {
		return nil, usagef(fmt.Sprintf("harness skills %s takes exactly one skill NAME", verb))
	}
	reg, err := scanRoots(ctx, cmd)
	if err != nil {
		return nil, err
	}
	name := cmd.Args().First()
	s, ok := reg.Lookup(name)
	if !ok {
		code, msg := reg.WhyMissing(name)
		return nil, &outcome.Error{Code: code, Msg: msg, Exit: outcome.ExitUsage}
	}
	return s, nil
}

func printEligibility(w io.Writer, s *skills.Skill) {
	fmt.Fprintln(w)
	if c, ok := s.Frontmatter["compatibility"].(string); ok {
		fmt.Fprintf(w, "compatibility: %s\n", c)
	}
	if s.IsEligible() {
		fmt.Fprintln(w, "eligible: yes")
		return
	}
	fmt.Fprintln(w, "eligible: no")
	m := s.Missing
	for _, p := range []struct {
		k  string
		vs []string
	}{{"missing programs", m.Bins}, {"needs one of", m.AnyBins}, {"missing environment variables", m.Env}, {"needs OS", m.OS}} {
		if len(p.vs) > 0 {
			fmt.Fprintf(w, "  %s: %s\n", p.k, strings.Join(p.vs, ", "))
		}
	}
	for _, h := range s.InstallHints {
		fmt.Fprintf(w, "  fix: %s\n", h)
	}
}

// printAssessment shows what the skill may touch by its manifest, what
// the content scan found, and the risk tier of both.
func printAssessment(w io.Writer, a audit.Assessment) {
	fmt.Fprintf(w, "\nrisk: %s\n", a.Risk)
	switch {
	case a.PermissionsError != "":
		fmt.Fprintf(w, "permissions: invalid: %s\n", a.PermissionsError)
	case a.Permissions == nil:
		fmt.Fprintln(w, "permissions: none declared (metadata.harness.permissions): its scripts and servers see the whole workspace read-write")
		fmt.Fprintln(w, "  but .git, .harness and the skill roots, may run any program the sandbox shows, and get no environment variables and no network")
	default:
		p := a.Permissions
		fmt.Fprintln(w, "permissions (declared → enforced by):")
		for _, f := range []struct {
			k, none, how string
			vs           []string
		}{
			{"read", "nothing", "read-only; the rest of the workspace does not exist for it (bwrap mount namespace; Landlock rules)", p.Filesystem.Read},
			{"write", "nothing", "read-write, but .git, .harness and the skill roots (bwrap mount namespace; Landlock rules)", p.Filesystem.Write},
			{"env", "none", "passed when the operator passes it with --pass-env (harness builds the environment from nothing)", p.Env},
			{"exec", "none: only its runtime", "may be executed besides its runtime (Landlock execute right, inside bwrap too)", p.Exec},
			{"network", "none", "through harness's egress proxy, when the operator allows it too (bwrap network namespace)", p.Network},
		} {
			if len(f.vs) == 0 {
				fmt.Fprintf(w, "  %s: %s\n", f.k, f.none)
				continue
			}
			fmt.Fprintf(w, "  %s: %s → %s\n", f.k, strings.Join(f.vs, ", "), f.how)
			if f.k == "exec" {
				// What the names and directories come to here is what
				// the execute layer holds: the reviewer sees files.
				// A run's workspace is where the command starts, mostly.
				wd, _ := os.Getwd()
				set := grant.ResolveExec(p.Exec, os.Getenv("PATH"), wd)
				fmt.Fprintf(w, "    on this machine: %s\n", set)
				if len(set.Missing) > 0 {
					fmt.Fprintf(w, "    not found here (runs nothing): %s\n", strings.Join(set.Missing, ", "))
				}
				if len(set.Refused) > 0 {
					fmt.Fprintf(w, "    refused (a call of this skill is refused): %s\n", strings.Join(set.Refused, ", "))
				}
			}
		}
		if p.Credentials {
			fmt.Fprintln(w, "  credentials: yes → a label for the reviewer; nothing enforces it")
		}
	}
	for _, f := range a.Findings {
		fmt.Fprintf(w, "finding: %s %s (%s:%d)\n", f.Severity, f.Rule, f.Path, f.Line)
	}
}
