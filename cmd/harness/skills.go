package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
	"github.com/urfave/cli/v3"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/run"
	"github.com/harness-dev/harness/skills"
)

// sandboxWorkspace is where the model sees the workspace; the skills
// commands print the same sandbox paths a run would record.
const sandboxWorkspace = "/workspace"

func skillsCommand() *cli.Command {
	return &cli.Command{
		Name:  "skills",
		Usage: "inspect, check, audit, install, validate and snapshot skill roots",
		Description: "A skill is a directory holding SKILL.md (YAML frontmatter with name and description,\n" +
			"then Markdown instructions); every other file below it is a supporting resource.\n" +
			"Roots are given with --skills-root (repeatable; the first root that defines a name wins).",
		Commands: []*cli.Command{
			skillsListCommand(),
			skillsShowCommand(),
			skillsInfoCommand(),
			skillsCheckCommand(),
			skillsAuditCommand(),
			skillsInstallCommand(),
			skillsValidateCommand(),
			skillsSnapshotCommand(),
		},
	}
}

// scanFlags are shared by the subcommands that scan roots.
func scanFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "skills-root", Usage: "skill root `DIR` (repeatable, precedence in the order given)", Sources: cli.EnvVars("HARNESS_SKILLS_ROOT")},
		&cli.StringFlag{Name: "workspace", Usage: "workspace `DIR`, for the sandbox paths (/workspace/...) a run would show", Value: ".", Sources: cli.EnvVars("HARNESS_WORKSPACE")},
		&cli.IntFlag{Name: "max-depth", Usage: "discovery depth below each root", Value: skills.DefaultLimits().DiscoveryDepth},
		&cli.IntFlag{Name: "max-dirs", Usage: "directories visited per root during discovery", Value: skills.DefaultLimits().DiscoveryDirs},
		&cli.IntFlag{Name: "max-resource-depth", Usage: "resource depth below each skill", Value: skills.DefaultLimits().ResourceDepth},
		&cli.IntFlag{Name: "max-resources", Usage: "resource files indexed per skill", Value: skills.DefaultLimits().ResourceFiles},
	}
}

func limitsFrom(cmd *cli.Command) (skills.Limits, error) {
	l := skills.Limits{
		DiscoveryDepth: int(cmd.Int("max-depth")),
		DiscoveryDirs:  int(cmd.Int("max-dirs")),
		ResourceDepth:  int(cmd.Int("max-resource-depth")),
		ResourceFiles:  int(cmd.Int("max-resources")),
	}
	if l.DiscoveryDepth < 1 || l.DiscoveryDirs < 1 || l.ResourceDepth < 1 || l.ResourceFiles < 1 {
		return l, usagef("scan limits must be at least 1 (--max-depth, --max-dirs, --max-resource-depth, --max-resources)")
	}
	return l, nil
}

// scanRoots resolves the roots the way `harness run` does (absolute,
// symlinks evaluated) and scans them.
func scanRoots(ctx context.Context, cmd *cli.Command) (*skills.Registry, error) {
	roots := cmd.StringSlice("skills-root")
	if len(roots) == 0 {
		return nil, usagef("no skill root: pass --skills-root DIR (repeatable) or set HARNESS_SKILLS_ROOT")
	}
	ws, err := realDir(cmd.String("workspace"), "--workspace")
	if err != nil {
		return nil, err
	}
	var resolved []string
	for _, r := range roots {
		abs, err := realDir(r, "--skills-root")
		if err != nil {
			return nil, err
		}
		resolved = append(resolved, abs)
	}
	limits, err := limitsFrom(cmd)
	if err != nil {
		return nil, err
	}
	return skills.Scan(ctx, skills.ScanOptions{
		Roots:            resolved,
		Workspace:        ws,
		SandboxWorkspace: sandboxWorkspace,
		Limits:           limits,
	})
}

func realDir(p, flag string) (string, error) {
	abs, err := filepath.Abs(p)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return "", usagef(fmt.Sprintf("%s %s: no such directory", flag, p))
	}
	fi, err := os.Stat(abs)
	if err != nil || !fi.IsDir() {
		return "", usagef(fmt.Sprintf("%s %s: not a directory", flag, p))
	}
	return abs, nil
}

// skillList is the --json output of `harness skills list`.
type skillList struct {
	artifacts.Envelope
	Digest      artifacts.Digest    `json:"digest"`
	Skills      []skillListEntry    `json:"skills"`
	Diagnostics []skills.Diagnostic `json:"diagnostics"`
}

type skillListEntry struct {
	Name        string           `json:"name"`
	Description string           `json:"description"`
	Root        string           `json:"root"`
	SkillPath   string           `json:"skillPath"`
	Digest      artifacts.Digest `json:"digest"`
	ShadowedBy  string           `json:"shadowedBy,omitempty"`
	Eligible    bool             `json:"eligible"`
	Resources   int              `json:"resources"`
	Diagnostics int              `json:"diagnostics"`
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
				out.Skills = append(out.Skills, skillListEntry{
					Name: s.Name, Description: s.Description, Root: s.Root, SkillPath: s.SkillPath,
					Digest: s.Digest, ShadowedBy: s.ShadowedBy, Eligible: s.IsEligible(), Resources: len(s.Resources), Diagnostics: len(s.Diagnostics),
				})
			}
			w := cmd.Root().Writer
			if cmd.Bool("json") {
				return writeJSONTo(w, out)
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tDESCRIPTION\tROOT\tDIAGNOSTICS")
			for _, s := range out.Skills {
				name := s.Name
				if s.ShadowedBy != "" {
					name += " (shadowed)"
				}
				if !s.Eligible {
					name += " (ineligible)"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\n", name, shorten(s.Description, 60), s.Root, s.Diagnostics)
			}
			tw.Flush()
			fmt.Fprintf(cmd.Root().ErrWriter, "%d skills, %d registry diagnostics\n", len(out.Skills), len(reg.Diagnostics))
			return nil
		},
	}
}

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

func formatDiagnostic(d skills.Diagnostic) string {
	loc := d.Path
	if d.Line > 0 {
		loc = fmt.Sprintf("%s:%d", d.Path, d.Line)
	}
	if loc != "" {
		loc = " (" + loc + ")"
	}
	return fmt.Sprintf("%s: %s [%s]%s", d.Severity, d.Detail, d.Code, loc)
}

func skillsValidateCommand() *cli.Command {
	return &cli.Command{
		Name:  "validate",
		Usage: "check skill directories or roots; exit 1 when any error is found",
		UsageText: "harness skills validate [--strict] [--json] PATH...\n\n" +
			"PATH is a skill directory (holding SKILL.md) or a root of skills.\n" +
			"Without --strict the lenient rules of `harness run` apply: only what would make a run\n" +
			"skip the skill is an error. --strict applies the Agent Skills specification's rules.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "strict", Usage: "apply the Agent Skills specification's rules (allowed keys, name and field lengths, directory name)"},
			&cli.BoolFlag{Name: "json", Usage: "print the validation results as JSON"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.NArg() == 0 {
				return usagef("harness skills validate needs at least one PATH (a skill directory or a root)")
			}
			results := []*skills.Validation{}
			failed := false
			for _, p := range cmd.Args().Slice() {
				if _, err := os.Stat(p); err != nil {
					return usagef(fmt.Sprintf("validate %s: no such file or directory", p))
				}
				v, err := skills.Validate(ctx, p, skills.ValidateOptions{Strict: cmd.Bool("strict")})
				if err != nil {
					return usagef(fmt.Sprintf("validate %s: %v", p, err))
				}
				results = append(results, v)
				failed = failed || v.HasErrors()
			}
			w := cmd.Root().Writer
			if cmd.Bool("json") {
				if err := writeJSONTo(w, struct {
					artifacts.Envelope
					Valid   bool                 `json:"valid"`
					Results []*skills.Validation `json:"results"`
				}{artifacts.NewEnvelope("harness.skill-validation", 1), !failed, results}); err != nil {
					return err
				}
			} else {
				for _, v := range results {
					printValidation(w, v)
				}
			}
			if failed {
				return &codeError{code: exitFailed, msg: "validation failed"}
			}
			return nil
		},
	}
}

func printValidation(w io.Writer, v *skills.Validation) {
	for _, d := range v.Diagnostics {
		fmt.Fprintf(w, "%s: %s\n", v.Path, formatDiagnostic(d))
	}
	if len(v.Skills) == 0 && len(v.Diagnostics) == 0 {
		fmt.Fprintf(w, "No skills found in %s\n", v.Path)
	}
	for _, s := range v.Skills {
		bad := hasError(s.Diagnostics)
		if bad {
			fmt.Fprintf(w, "Validation failed for %s:\n", s.Path)
		} else {
			fmt.Fprintf(w, "Valid skill: %s\n", s.Path)
		}
		for _, d := range s.Diagnostics {
			fmt.Fprintf(w, "  - %s\n", formatDiagnostic(d))
		}
	}
}

func hasError(ds []skills.Diagnostic) bool {
	for _, d := range ds {
		if d.Severity == skills.SeverityError {
			return true
		}
	}
	return false
}

func skillsSnapshotCommand() *cli.Command {
	return &cli.Command{
		Name:      "snapshot",
		Usage:     "write the registry snapshot (skill-registry.json) a run would take",
		UsageText: "harness skills snapshot --skills-root DIR [--skills-root DIR]... --out FILE",
		Flags:     append(scanFlags(), &cli.StringFlag{Name: "out", Usage: "write the snapshot to `FILE` (- for standard output)"}),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.NArg() > 0 {
				return usagef(fmt.Sprintf("unexpected argument %q: give roots with --skills-root", cmd.Args().First()))
			}
			out := cmd.String("out")
			if out == "" {
				return usagef("harness skills snapshot needs --out FILE (- for standard output)")
			}
			reg, err := scanRoots(ctx, cmd)
			if err != nil {
				return err
			}
			if out == "-" {
				return writeJSONTo(cmd.Root().Writer, reg)
			}
			if err := artifacts.WriteJSON(out, reg); err != nil {
				return fmt.Errorf("write snapshot: %w", err)
			}
			fmt.Fprintf(cmd.Root().ErrWriter, "wrote %s: %d skills, %d diagnostics, digest %s\n", out, len(reg.Skills), countDiagnostics(reg), reg.Digest)
			return nil
		},
	}
}

func countDiagnostics(reg *skills.Registry) int {
	n := len(reg.Diagnostics)
	for _, s := range reg.Skills {
		n += len(s.Diagnostics)
		for _, r := range s.Resources {
			n += len(r.Diagnostics)
		}
	}
	return n
}

func writeJSONTo(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode JSON: %w", err)
	}
	return nil
}

// shorten cuts s to at most n runes on one line, marking the cut.
func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
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
		avail := strings.Join(reg.Available(), ", ")
		if avail == "" {
			avail = "none"
		}
		return nil, usagef(fmt.Sprintf("skill not found: %s; available skills: %s", name, avail))
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

// eligibilityReport is the --json output of `harness skills check`.
type eligibilityReport struct {
	artifacts.Envelope
	Total      int               `json:"total"`
	Eligible   int               `json:"eligible"`
	Ineligible int               `json:"ineligible"`
	Skills     []eligibilityItem `json:"skills"`
}

type eligibilityItem struct {
	Name         string          `json:"name"`
	Eligible     bool            `json:"eligible"`
	Missing      *skills.Missing `json:"missing,omitempty"`
	InstallHints []string        `json:"installHints,omitempty"`
}

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
					return usagef(fmt.Sprintf("skill not found: %s; available skills: %s", name, strings.Join(reg.Available(), ", ")))
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
				return &codeError{code: exitFailed, msg: "skill " + name + " is not eligible on this machine"}
			}
			return nil
		},
	}
}

func skillsAuditCommand() *cli.Command {
	return &cli.Command{
		Name:  "audit",
		Usage: "scan a skill for injection-like and dangerous content; exit 1 on a critical finding",
		UsageText: "harness skills audit NAME --skills-root DIR [--json]\n" +
			"harness skills audit PATH [--json]      (a skill directory)\n\n" +
			"Rules have stable ids naming their family, e.g. prompt-injection.override,\n" +
			"exfiltration.webhook, obfuscation.base64-shell, hidden.unicode-tags.",
		Flags: append(scanFlags(), &cli.BoolFlag{Name: "json", Usage: "print the findings as JSON"}),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.NArg() != 1 {
				return usagef("harness skills audit takes exactly one skill NAME or directory PATH")
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
			findings := run.AuditSkill(s)
			critical := false
			for _, f := range findings {
				critical = critical || f.Severity == "critical"
			}
			w := cmd.Root().Writer
			if cmd.Bool("json") {
				if findings == nil {
					findings = []run.PolicyFinding{}
				}
				if err := writeJSONTo(w, struct {
					artifacts.Envelope
					Skill    string              `json:"skill"`
					Critical bool                `json:"critical"`
					Findings []run.PolicyFinding `json:"findings"`
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
				return &codeError{code: exitFailed, msg: "critical findings"}
			}
			return nil
		},
	}
}

func skillsInstallCommand() *cli.Command {
	return &cli.Command{
		Name:  "install",
		Usage: "install a skill from a local directory or archive, refusing anything unsafe",
		UsageText: "harness skills install SOURCE --to ROOT [--force] [--allow-risky] [--config FILE]\n\n" +
			"SOURCE is a skill directory or a .tar.gz/.tgz/.zip archive of one, under a trusted source\n" +
			"listed in the config file:\n\n" +
			"    skills:\n      trustedSources: [/srv/skills, ./vendor/skills]\n\n" +
			"The skill is unpacked into a staging directory in ROOT, validated (--strict rules), scanned\n" +
			"(a critical finding refuses, exit 5, unless --allow-risky), then renamed into place and\n" +
			"recorded in ROOT/skills.lock.json. Programs a skill needs are never installed: the hints\n" +
			"are printed.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "to", Usage: "skills root `DIR` to install into", Sources: cli.EnvVars("HARNESS_SKILLS_ROOT")},
			&cli.BoolFlag{Name: "force", Usage: "replace an installed skill of the same name"},
			&cli.BoolFlag{Name: "allow-risky", Usage: "install despite critical content findings"},
			&cli.StringFlag{Name: "config", Usage: "YAML `FILE` with skills.trustedSources", Sources: cli.EnvVars("HARNESS_CONFIG")},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.NArg() != 1 {
				return usagef("harness skills install takes exactly one SOURCE (a directory or archive)")
			}
			if cmd.String("to") == "" {
				return usagef("harness skills install needs --to ROOT, the skills root to install into")
			}
			trustedSources, err := readTrustedSources(cmd.String("config"))
			if err != nil {
				return err
			}
			in, err := run.InstallSkill(ctx, run.InstallOptions{
				Source: cmd.Args().First(), Root: cmd.String("to"), TrustedSources: trustedSources,
				Force: cmd.Bool("force"), AllowRisky: cmd.Bool("allow-risky"),
			})
			if err != nil {
				return err
			}
			w := cmd.Root().Writer
			fmt.Fprintf(w, "installed %s at %s (%s)\n", in.Name, in.Dir, in.Digest)
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

// readTrustedSources reads skills.trustedSources from the config file;
// relative entries are relative to the file.
func readTrustedSources(file string) ([]string, error) {
	if file == "" {
		return nil, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, usagef(fmt.Sprintf("--config %s: %v", file, err))
	}
	var cfg struct {
		Skills struct {
			TrustedSources []string `yaml:"trustedSources"`
		} `yaml:"skills"`
	}
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return nil, usagef(fmt.Sprintf("--config %s: invalid YAML: %v", file, err))
	}
	var out []string
	for _, p := range cfg.Skills.TrustedSources {
		if !filepath.IsAbs(p) {
			p = filepath.Join(filepath.Dir(file), p)
		}
		out = append(out, p)
	}
	return out, nil
}
