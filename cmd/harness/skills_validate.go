package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/skills"
	"github.com/harness-dev/harness/tools"
)

func skillsValidateCommand() *cli.Command {
	return &cli.Command{
		Name:  "validate",
		Usage: "check skill directories or roots; exit 1 when any error is found",
		UsageText: "harness skills validate [--strict] [--format text|json|github|sarif] PATH...\n\n" +
			"PATH is a skill directory (holding SKILL.md) or a root of skills.\n" +
			"Without --strict the lenient rules of `harness run` apply: only what would make a run\n" +
			"skip the skill is an error. --strict applies the Agent Skills specification's rules.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "strict", Usage: "apply the Agent Skills specification's rules (allowed keys, name and field lengths, directory name)"},
			&cli.BoolFlag{Name: "json", Usage: "print the validation results as JSON (short for --format json)"},
			&cli.StringFlag{Name: "format", Usage: "output `FORMAT`: text, json, github (workflow commands that annotate files in a GitHub Actions run) or sarif (SARIF 2.1.0 for code-scanning tools)", Value: "text"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.NArg() == 0 {
				return usagef("harness skills validate needs at least one PATH (a skill directory or a root)")
			}
			format := cmd.String("format")
			if cmd.Bool("json") {
				format = "json"
			}
			if !slices.Contains([]string{"text", "json", "github", "sarif"}, format) {
				return usagef(fmt.Sprintf("--format %q: use text, json, github or sarif", format))
			}
			results := []*skills.Validation{}
			failed := false
			for _, p := range cmd.Args().Slice() {
				if _, err := os.Stat(p); err != nil {
					return usagef(fmt.Sprintf("validate %s: no such file or directory", p))
				}
				v, err := skills.Validate(ctx, p, skills.ValidateOptions{Strict: cmd.Bool("strict"), Check: checkSkill})
				if err != nil {
					return usagef(fmt.Sprintf("validate %s: %v", p, err))
				}
				results = append(results, v)
				failed = failed || v.HasErrors()
				if len(v.Skills) == 0 && cmd.Bool("strict") {
					// A typo in a path must not pass CI as "no errors".
					fmt.Fprintf(cmd.Root().ErrWriter, "harness: %s holds no skill (no SKILL.md in it or below it)\n", p)
					failed = true
				}
			}
			w := cmd.Root().Writer
			switch format {
			case "github":
				writeGitHub(w, results)
			case "sarif":
				if err := writeJSONTo(w, toSARIF(results)); err != nil {
					return err
				}
			case "json":
				if err := writeJSONTo(w, struct {
					artifacts.Envelope
					Valid   bool                 `json:"valid"`
					Results []*skills.Validation `json:"results"`
				}{artifacts.NewEnvelope("harness.skill-validation", 1), !failed, results}); err != nil {
					return err
				}
			default:
				for _, v := range results {
					printValidation(w, v)
				}
			}
			if failed {
				return reported(outcome.ExitFailed, "validation failed")
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

// checkMCPConfig holds a skill's MCP servers (mcp.json or
// metadata.harness.mcp) to what harness can start: the configuration
// parses, a command under the skill is an executable file of it, and
// every argument that names a file (server.py, ./scripts/serve.js) names
// one the skill has.
// maxMCPConfig bounds a skill's mcp.json as validate reads it.
const maxMCPConfig = 1 << 20

func checkMCPConfig(s *skills.Skill) []skills.Diagnostic {
	diag := func(code, format string, args ...any) skills.Diagnostic {
		return skills.Diagnostic{Severity: skills.SeverityError, Code: code, Detail: fmt.Sprintf(format, args...), Path: s.SkillPath}
	}
	servers, file, _, err := tools.SkillServers(s, func(rel string) ([]byte, error) {
		// Read again after the scan: beneath the skill, no link, no FIFO
		// or device, bounded, whatever was put there since.
		return artifacts.ReadBeneathAtMost(s.SkillDir, filepath.FromSlash(rel), maxMCPConfig)
	})
	if err != nil {
		return []skills.Diagnostic{diag(skills.CodeMCPConfigInvalid, "%v", err)}
	}
	var out []skills.Diagnostic
	has := func(p string) (*skills.Resource, bool) {
		return s.Resource(path.Clean(strings.TrimPrefix(strings.TrimPrefix(p, "${SKILL_DIR}/"), "./")))
	}
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		srv := servers[name]
		if cmd := srv.Command; strings.HasPrefix(cmd, "./") || strings.HasPrefix(cmd, "${SKILL_DIR}/") {
			if res, ok := has(cmd); !ok || res.Executable == nil || !*res.Executable {
				out = append(out, diag(skills.CodeMCPFileMissing, "%s: server %s runs %s, which is not an executable file of the skill", file, name, cmd))
			}
		}
		for _, a := range srv.Args {
			if !namesFile(a) {
				continue
			}
			if _, ok := has(a); !ok {
				out = append(out, diag(skills.CodeMCPFileMissing, "%s: server %s is given %s, which the skill does not have (an argument that names a file is that file of the skill)", file, name, a))
			}
		}
	}
	return out
}

// namesFile reports whether a server argument reads as a file of the
// skill: a relative path with a directory or an extension, not a flag.
func namesFile(a string) bool {
	a = strings.TrimPrefix(a, "${SKILL_DIR}/")
	if a == "" || strings.HasPrefix(a, "-") || strings.HasPrefix(a, "/") || strings.ContainsAny(a, " =:${}") {
		return false
	}
	return strings.Contains(a, "/") || path.Ext(a) != ""
}

// checkSkill is what `skills validate` checks beyond the specification:
// the skill's MCP servers and its schedule.
func checkSkill(s *skills.Skill) []skills.Diagnostic {
	return append(checkMCPConfig(s), checkSchedule(s)...)
}
