package run

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/workspace"
)

// resolved is the outcome of checking the options against the filesystem:
// absolute, symlink-free paths that every later stage uses.
type resolved struct {
	workspace   string   // absolute host path
	cwd         string   // slash path relative to workspace, "." for the root
	skillsRoots []string // absolute host paths inside workspace
	// externalRoots are outside the workspace, after skillsRoots.
	externalRoots []string
	runDir        string // absolute host path of this run's directory
	runID         string
	// attachments are the --attach files as read at the start (a resume
	// takes them from the journal, never from the disk again).
	attachments []record.Attachment
}

// maxAttachment bounds one --attach file: it goes whole into the context.
const maxAttachment = 1 << 20

// readAttachments reads each --attach file once, for the run to keep.
func readAttachments(paths []string) ([]record.Attachment, error) {
	var out []record.Attachment
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, outcome.Usage("attach_invalid", "--attach %s: %v", p, err)
		}
		b, err := readAttachment(abs)
		if err != nil {
			return nil, outcome.Usage("attach_invalid", "--attach %s: %v", p, err)
		}
		if !utf8.Valid(b) {
			return nil, outcome.Usage("attach_invalid", "--attach %s is not UTF-8 text", p)
		}
		out = append(out, record.Attachment{Path: abs, Digest: artifacts.DigestBytes(b), Content: string(b)})
	}
	return out, nil
}

// readAttachment reads one --attach file, judged by the descriptor it
// opened (artifacts.ReadRegular), in the words --attach has always used.
func readAttachment(path string) ([]byte, error) {
	b, err := artifacts.ReadRegular(path, maxAttachment)
	var tooLarge *artifacts.TooLargeError
	switch {
	case errors.As(err, &tooLarge) && tooLarge.Size >= 0:
		return nil, fmt.Errorf("%d bytes; at most %d can be attached", tooLarge.Size, maxAttachment)
	case errors.As(err, &tooLarge):
		return nil, fmt.Errorf("more than %d bytes; at most %d can be attached", maxAttachment, maxAttachment)
	case err != nil:
		return nil, errors.New("not a readable file")
	}
	return b, nil
}

func resolveWorkspace(dir string) (string, error) {
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", outcome.Usage("workspace_invalid", "--workspace %s: %v", dir, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", outcome.Usage("workspace_invalid", "--workspace %s does not exist: create it or pass an existing directory", dir)
		}
		return "", outcome.Usage("workspace_invalid", "--workspace %s: %v", dir, err)
	}
	st, err := os.Stat(real)
	if err != nil {
		return "", outcome.Usage("workspace_invalid", "--workspace %s: %v", dir, err)
	}
	if !st.IsDir() {
		return "", outcome.Usage("workspace_invalid", "--workspace %s is not a directory", dir)
	}
	return real, nil
}

// resolveCwd checks --cwd: relative to the workspace and inside it after
// symlinks are evaluated.
func resolveCwd(ws, cwd string) (string, error) {
	if cwd == "" || cwd == "." {
		return ".", nil
	}
	if filepath.IsAbs(cwd) {
		return "", outcome.Usage("cwd_invalid", "--cwd %s must be relative to the workspace", cwd)
	}
	real, err := filepath.EvalSymlinks(filepath.Join(ws, cwd))
	if err != nil {
		return "", outcome.Usage("cwd_invalid", "--cwd %s: %v", cwd, err)
	}
	if !workspace.Within(ws, real) {
		return "", outcome.Usage("cwd_outside_workspace", "--cwd must stay within the workspace: %s resolves to %s", cwd, real)
	}
	st, err := os.Stat(real)
	if err != nil || !st.IsDir() {
		return "", outcome.Usage("cwd_invalid", "--cwd %s is not a directory in the workspace", cwd)
	}
	rel, _ := filepath.Rel(ws, real)
	return filepath.ToSlash(rel), nil
}

// allRoots is every skill root in precedence order, as the scan takes them.
func (res resolved) allRoots() []string {
	return append(slices.Clip(res.skillsRoots), res.externalRoots...)
}

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

// resolveSkillsRoots checks each --skills-root: it must exist and resolve
// inside the workspace, so that every skill has a sandbox path and nothing
// outside the operator's workspace becomes model context. Duplicates (after
// resolution) keep their first position.
func resolveSkillsRoots(ws string, roots []string) ([]string, error) {
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

// resolveExternalRoots checks each --external-skills-root: it must exist,
// be a directory, lie outside the workspace (a root inside it belongs in
// --skills-root, where the model sees it under /workspace) and not contain
// the workspace (which would make the whole workspace skill context).
func resolveExternalRoots(ws string, inside, roots []string) ([]string, error) {
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

// sandboxPath maps a host path inside the workspace to the model's view.
func sandboxPath(ws, host string) string {
	rel, err := filepath.Rel(ws, host)
	if err != nil || rel == "." {
		return workspace.DefaultSandbox
	}
	return path.Join(workspace.DefaultSandbox, filepath.ToSlash(rel))
}
