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
	"unicode/utf8"

	"github.com/urfave/cli/v3"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/resolve"
	"github.com/harness-dev/harness/skills"
	"github.com/harness-dev/harness/workspace"
)

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
			skillsAddCommand(),
			skillsOutdatedCommand(),
			skillsUpdateCommand(),
			skillsIndexCommand(),
			skillsDiscoverCommand(),
			skillsSearchCommand(),
			skillsValidateCommand(),
			skillsInitCommand(),
			skillsSnapshotCommand(),
			skillsVersionsCommand(),
			skillsRollbackCommand(),
			skillsRemoveCommand(),
			skillsPendingCommand(),
			skillsDecideCommand(true),
			skillsDecideCommand(false),
		},
	}
}

// scanFlags are shared by the subcommands that scan roots.
func scanFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "skills-root", Usage: "skill root `DIR` (repeatable, precedence in the order given; \"auto\": whichever of .agents/skills, .claude/skills, skills the workspace has)", Sources: cli.EnvVars("HARNESS_SKILLS_ROOT")},
		&cli.StringSliceFlag{Name: "external-skills-root", Usage: "skill root `DIR` outside the workspace, after every --skills-root (shown as /skills/<label>)", Sources: cli.EnvVars("HARNESS_EXTERNAL_SKILLS_ROOT")},
		&cli.StringFlag{Name: "workspace", Usage: "workspace `DIR`, for the sandbox paths (/workspace/...) a run would show", Value: ".", Sources: cli.EnvVars("HARNESS_WORKSPACE")},
		&cli.IntFlag{Name: "max-depth", Usage: "discover skills at most `N` directories below each root", Value: skills.DefaultLimits().DiscoveryDepth},
		&cli.IntFlag{Name: "max-dirs", Usage: "visit at most `N` directories per root during discovery", Value: skills.DefaultLimits().DiscoveryDirs},
		&cli.IntFlag{Name: "max-resource-depth", Usage: "index resources at most `N` directories below each skill", Value: skills.DefaultLimits().ResourceDepth},
		&cli.IntFlag{Name: "max-resources", Usage: "index at most `N` resource files per skill", Value: skills.DefaultLimits().ResourceFiles},
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
	roots, external := cmd.StringSlice("skills-root"), cmd.StringSlice("external-skills-root")
	if len(roots)+len(external) == 0 {
		return nil, usagef("no skill root: pass --skills-root DIR (repeatable) or set HARNESS_SKILLS_ROOT")
	}
	ws, err := realDir(cmd.String("workspace"), "--workspace")
	if err != nil {
		return nil, err
	}
	if roots, err = resolve.ExpandAutoRoots(ws, roots); err != nil {
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
	for _, r := range external {
		abs, err := realDir(r, "--external-skills-root")
		if err != nil {
			return nil, err
		}
		resolved = append(resolved, abs)
	}
	limits, err := limitsFrom(cmd)
	if err != nil {
		return nil, err
	}
	scan := skills.ScanOptions{
		Roots:            resolved,
		Workspace:        ws,
		SandboxWorkspace: workspace.DefaultSandbox,
		Limits:           limits,
	}
	// Only skills snapshot has the flag: the other listings read few files.
	if cmd.String("snapshot-cache") != "" {
		if scan.Cache, err = skills.OpenSnapshotCache(cmd.String("snapshot-cache"), scan); err != nil {
			return nil, usagef(err.Error())
		}
	}
	return skills.Scan(ctx, scan)
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

func hasError(ds []skills.Diagnostic) bool {
	for _, d := range ds {
		if d.Severity == skills.SeverityError {
			return true
		}
	}
	return false
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
