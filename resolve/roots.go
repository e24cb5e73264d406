package resolve

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/workspace"
)

// AutoRoot is the --skills-root value that asks for conventional
// discovery; AutoRootCandidates are what it looks for, in order.
const AutoRoot = "auto"

// AutoRootCandidates are the workspace directories `--skills-root auto`
// uses, in precedence order, when they exist.
var AutoRootCandidates = []string{".agents/skills", ".claude/skills", "skills"}

// ExpandAutoRoots replaces "auto" with the conventional roots the workspace
// has. Finding none is a usage error: a run that asked for skills and
// silently got none would pass CI by accident.
func ExpandAutoRoots(ws string, roots []string) ([]string, error) {
	var out []string
	for _, r := range roots {
		if r != AutoRoot {
			out = append(out, r)
			continue
		}
		found := 0
		for _, c := range AutoRootCandidates {
			p := filepath.Join(ws, filepath.FromSlash(c))
			if st, err := os.Stat(p); err == nil && st.IsDir() {
				out = append(out, p)
				found++
			}
		}
		if found == 0 {
			return nil, outcome.Usage("skills_root_invalid", "--skills-root auto found none of %s in the workspace %s; create one or name the root", strings.Join(AutoRootCandidates, ", "), ws)
		}
	}
	return out, nil
}

// SkillsRoots checks each --skills-root: it must exist and resolve
// inside the workspace, so that every skill has a sandbox path and nothing
// outside the operator's workspace becomes model context. Duplicates (after
// resolution) keep their first position.
func SkillsRoots(ws string, roots []string) ([]string, error) {
	roots, err := ExpandAutoRoots(ws, roots)
	if err != nil {
		return nil, err
	}
	var out []string
	seen := map[string]bool{}
	for _, r := range roots {
		abs, err := filepath.Abs(r)
		if err != nil {
			return nil, outcome.Usage("skills_root_invalid", "--skills-root %s: %v", r, err)
		}
		real, err := filepath.EvalSymlinks(abs)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, outcome.Usage("skills_root_invalid", "--skills-root %s does not exist", r)
			}
			return nil, outcome.Usage("skills_root_invalid", "--skills-root %s: %v", r, err)
		}
		if !workspace.Within(ws, real) {
			return nil, outcome.Usage("skills_root_outside_workspace", "--skills-root must stay within the workspace: %s resolves to %s, outside %s (a shared root outside the workspace goes in --external-skills-root)", r, real, ws)
		}
		if st, err := os.Stat(real); err != nil || !st.IsDir() {
			return nil, outcome.Usage("skills_root_invalid", "--skills-root %s is not a directory", r)
		}
		if !seen[real] {
			seen[real] = true
			out = append(out, real)
		}
	}
	return out, nil
}

// ExternalRoots checks each --external-skills-root: it must exist,
// be a directory, lie outside the workspace (a root inside it belongs in
// --skills-root, where the model sees it under /workspace) and not contain
// the workspace (which would make the whole workspace skill context).
func ExternalRoots(ws string, inside, roots []string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, r := range inside {
		seen[r] = true
	}
	for _, r := range roots {
		abs, err := filepath.Abs(r)
		if err == nil {
			abs, err = filepath.EvalSymlinks(abs)
		}
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, outcome.Usage("skills_root_invalid", "--external-skills-root %s does not exist", r)
			}
			return nil, outcome.Usage("skills_root_invalid", "--external-skills-root %s: %v", r, err)
		}
		if st, err := os.Stat(abs); err != nil || !st.IsDir() {
			return nil, outcome.Usage("skills_root_invalid", "--external-skills-root %s is not a directory", r)
		}
		if workspace.Within(ws, abs) {
			return nil, outcome.Usage("external_root_inside_workspace", "--external-skills-root %s lies inside the workspace %s; give it with --skills-root", r, ws)
		}
		if workspace.Within(abs, ws) {
			return nil, outcome.Usage("external_root_contains_workspace", "--external-skills-root %s contains the workspace %s; name the directory that holds the skills", r, ws)
		}
		if !seen[abs] {
			seen[abs] = true
			out = append(out, abs)
		}
	}
	return out, nil
}
