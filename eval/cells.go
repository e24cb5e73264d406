package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/skills"
	"github.com/harness-dev/harness/workspace"
)

// Bounds of what an eval copies: a skill, and one eval's inputs.
const (
	maxCopyFiles = 10000
	maxCopyBytes = 256 << 20
)

// batchTask is one cell as the batch file states it.
type batchTask struct {
	ID            string            `json:"id"`
	Prompt        string            `json:"prompt"`
	Vars          map[string]string `json:"vars"`
	Model         string            `json:"model,omitempty"`
	Workspace     string            `json:"workspace"`
	SkillsRoot    []string          `json:"external-skills-root"`
	Skills        []string          `json:"skills,omitempty"`
	AllowTools    []string          `json:"allow-tools,omitempty"`
	AllowCommands []string          `json:"allow-commands,omitempty"`
}

// writeBatch writes the batch file of the cells (this shard's are chosen
// by the batch engine, by the cell id's digest).
func (e *evalRun) writeBatch() (artifacts.Digest, error) {
	var tasks []batchTask
	for _, c := range e.manifest.Cells {
		t := batchTask{ID: c.ID, Model: c.Model, Workspace: filepath.Join(record.DirEvalCells, c.ID), AllowTools: e.opts.AllowTools,
			// The eval's words are the prompt as they are: a template
			// that only hands over a var, so nothing in them is read as
			// one.
			Prompt: "{{ .vars.prompt }}"}
		// The patterns are the cells' only when the model may run commands;
		// command checks use them either way.
		if slices.Contains(e.opts.AllowTools, "run_command") {
			t.AllowCommands = e.opts.AllowCommands
		}
		switch c.Configuration {
		case record.ConfigTrigger:
			i := 0
			fmt.Sscanf(c.EvalID, "q%d", &i)
			t.Vars = map[string]string{"prompt": e.suite.Triggers[i-1].Query}
			// The skill among the others of its root, not preloaded:
			// the model must reach for it by its description.
			t.SkillsRoot = []string{filepath.Dir(e.suite.SkillDir)}
		default:
			t.Vars = map[string]string{"prompt": e.suite.eval(c.EvalID).Prompt}
			t.SkillsRoot = []string{filepath.Join(record.DirEvalRoots, c.Configuration)}
			if c.Configuration != record.ConfigWithoutSkill {
				t.Skills = []string{e.manifest.Skill}
			}
		}
		tasks = append(tasks, t)
	}
	b, err := json.MarshalIndent(map[string]any{"version": 1, "tasks": tasks}, "", "  ")
	if err != nil {
		return "", err
	}
	b = append(b, '\n')
	return artifacts.DigestBytes(b), artifacts.WriteFile(filepath.Join(e.dir, record.FileEvalBatch), b, 0o644)
}

// copySkill copies a skill directory to dst/<name>/ and scans it there:
// the name and digest are those of the copy every cell runs with, and a
// skill that does not load is refused with the scanner's reasons.
func copySkill(ctx context.Context, src, dstRoot string) (string, artifacts.Digest, error) {
	sk, err := copySkillVersion(ctx, src, dstRoot)
	if err != nil {
		return "", "", err
	}
	return sk.Name, sk.Version(), nil
}

// copySkillVersion is copySkill giving the skill as the copy scanned.
func copySkillVersion(ctx context.Context, src, dstRoot string) (*skills.Skill, error) {
	abs, err := filepath.Abs(src)
	if err != nil {
		return nil, outcome.Usage("eval_skill_invalid", "%s: %v", src, err)
	}
	tmp := filepath.Join(dstRoot, filepath.Base(abs))
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return nil, err
	}
	if err := copyTree(abs, tmp); err != nil {
		return nil, outcome.Usage("eval_skill_invalid", "copy the skill %s: %v", src, err)
	}
	reg, err := skills.Scan(ctx, skills.ScanOptions{Roots: []string{dstRoot}, Workspace: dstRoot, SandboxWorkspace: workspace.DefaultSandbox})
	if err != nil {
		return nil, outcome.Usage("eval_skill_invalid", "the skill %s: %v", src, err)
	}
	if len(reg.Skills) != 1 {
		var why []string
		for _, d := range reg.Diagnostics {
			why = append(why, fmt.Sprintf("%s:%d: %s (%s)", d.Path, d.Line, d.Detail, d.Code))
		}
		return nil, outcome.Usage("eval_skill_invalid", "%s does not load as a skill: %s", src, strings.Join(why, "; "))
	}
	sk := reg.Skills[0]
	if sk.Name != filepath.Base(abs) {
		if err := os.Rename(tmp, filepath.Join(dstRoot, sk.Name)); err != nil {
			return nil, err
		}
	}
	return &sk, nil
}

// copyTree copies regular files and directories from src to dst. A
// symbolic link is copied as a link only when it stays inside the tree;
// anything else (a link out, a device, a socket) is refused.
func copyTree(src, dst string) error {
	root, err := os.OpenRoot(src)
	if err != nil {
		return err
	}
	defer root.Close()
	return copyRoot(root, dst)
}

// copyRoot is copyTree from a directory already opened.
func copyRoot(root *os.Root, dst string) error {
	files, size := 0, int64(0)
	return fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(dst, filepath.FromSlash(p))
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := root.Readlink(p)
			if err != nil {
				return err
			}
			if filepath.IsAbs(link) || !filepath.IsLocal(filepath.Join(filepath.Dir(p), link)) {
				return fmt.Errorf("%s is a link out of the skill (%s)", p, link)
			}
			// As written it stays inside, but a link on its way (self ->
			// ".") may climb further than its text says: followed
			// beneath the root, it must arrive at something there.
			if _, err := root.Stat(p); err != nil {
				return fmt.Errorf("%s is a link out of the skill or to nothing in it (%s): %v", p, link, err)
			}
			return os.Symlink(link, target)
		case !d.Type().IsRegular():
			return fmt.Errorf("%s is not a regular file", p)
		}
		files++
		if files > maxCopyFiles {
			return fmt.Errorf("more than %d files", maxCopyFiles)
		}
		n, err := copyFile(root, p, target, maxCopyBytes-size)
		size += n
		return err
	})
}

// copyFile copies name beneath root to target, at most limit bytes.
func copyFile(root *os.Root, name, target string, limit int64) (int64, error) {
	// O_NONBLOCK: a FIFO opens at once (rather than waiting for a
	// writer) and is then refused on its descriptor.
	in, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return 0, err
	}
	if !fi.Mode().IsRegular() {
		return 0, fmt.Errorf("%s is not a regular file", name)
	}
	if fi.Size() > limit {
		return 0, fmt.Errorf("%s: over the %d MiB an eval copies", name, maxCopyBytes>>20)
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return 0, err
	}
	out, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, fi.Mode().Perm()|0o600)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, io.LimitReader(in, limit+1))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil && n > limit {
		err = fmt.Errorf("%s grew past the %d MiB an eval copies", name, maxCopyBytes>>20)
	}
	return n, err
}

// copyInputs copies an eval's files (or directories) from beneath base
// into a cell's workspace under the same relative paths: opened beneath
// base, so no name or link leads out of it.
func copyInputs(base string, files []string, ws, evalDir string) error {
	// An input that holds the eval directory would copy the cells into
	// themselves, and earlier evals and their runs into the model's view.
	if r, err := filepath.Rel(base, evalDir); err == nil && filepath.IsLocal(r) {
		for _, f := range files {
			c := filepath.Clean(f)
			if c == "." || r == c || strings.HasPrefix(r, c+string(filepath.Separator)) {
				return fmt.Errorf("files: %s holds the eval's own directory (%s): name the inputs inside it instead", f, r)
			}
		}
	}
	root, err := os.OpenRoot(base)
	if err != nil {
		return err
	}
	defer root.Close()
	size := int64(0)
	for _, f := range slices.Compact(slices.Sorted(slices.Values(files))) {
		if err := inputPath(f); err != nil {
			return err
		}
		fi, err := root.Lstat(f)
		if err != nil {
			return fmt.Errorf("files: %s: %v", f, err)
		}
		if fi.IsDir() {
			sub, err := root.OpenRoot(f)
			if err != nil {
				return fmt.Errorf("files: %s: %v", f, err)
			}
			err = copyRoot(sub, filepath.Join(ws, f))
			sub.Close()
			if err != nil {
				return fmt.Errorf("files: %s: %v", f, err)
			}
			continue
		}
		n, err := copyFile(root, f, filepath.Join(ws, f), maxCopyBytes-size)
		if err != nil {
			return fmt.Errorf("files: %v", err)
		}
		size += n
	}
	return nil
}
