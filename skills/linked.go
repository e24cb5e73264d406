package skills

import (
	"fmt"
	"path/filepath"
	"strings"
)

// SkillLink records how a skill reached through a symbolic link was
// found: the root the link sits in and the link's own path. The skill's
// SkillDir is then the link's canonical target, which is what is read and
// digested.
type SkillLink struct {
	Root string `json:"root"`
	Path string `json:"path"`
}

// linkedSkill accepts a symbolic link in root r that names a skill
// directory outside r but inside the workspace or another declared root:
// the layout that keeps one copy of a skill under skills/ and links it
// from .agents/skills/. The skill is read from its canonical directory,
// through the declared root that holds it or, when none does, through a
// root opened at the skill directory itself, so the skill's own file links
// keep the rule that they stay inside what was declared.
func (sc *scanner) linkedSkill(r *scanRoot, p, rel string) (candidate, bool) {
	real, err := filepath.EvalSymlinks(p)
	if err != nil || within(r.path, real) || !isSkillDir(real).ok {
		return candidate{}, false
	}
	fsRoot := sc.rootHolding(real)
	if fsRoot == nil {
		if sc.workspace == "" || !within(sc.workspace, real) {
			return candidate{}, false
		}
		if fsRoot = sc.linkRoots[real]; fsRoot == nil {
			if fsRoot, err = openScanRoot(real); err != nil {
				sc.diag(SeverityWarning, CodeSkillFileUnreadable, p, "linked skill %s cannot be opened: %v", real, err)
				return candidate{}, false
			}
			fsRoot.index = -1
			if sc.linkRoots == nil {
				sc.linkRoots = map[string]*scanRoot{}
			}
			sc.linkRoots[real] = fsRoot
		}
	}
	return candidate{root: fsRoot, index: r.index, dir: real, rel: rel, link: &SkillLink{Root: r.path, Path: p}}, true
}

// rootHolding is the first declared root that contains p, or nil.
func (sc *scanner) rootHolding(p string) *scanRoot {
	for _, r := range sc.roots {
		if within(r.path, p) {
			return r
		}
	}
	return nil
}

// dedupe keeps the first candidate of each canonical skill directory: a
// skill reached through a link and again directly (or through two roots
// that nest) is one skill, found where precedence first meets it.
func (sc *scanner) dedupe(cands []candidate) []candidate {
	seen := make(map[string]string, len(cands))
	out := cands[:0]
	for _, c := range cands {
		canon := c.dir
		if c.link == nil && c.viaLink {
			if real, err := filepath.EvalSymlinks(c.dir); err == nil {
				canon = real
			}
		}
		where := c.dir
		if c.link != nil {
			where = c.link.Path
		}
		if first, dup := seen[canon]; dup {
			sc.diag(SeverityInfo, CodeSkillReachedTwice, where, "the skill directory %s is also reached as %s, which comes first; it is one skill", canon, first)
			continue
		}
		seen[canon] = where
		out = append(out, c)
	}
	return out
}

// ExternalLabels names each external root for the model: the root
// directory's base name, made unique with a numeric suffix, so a root is
// shown at /skills/<label>.
func ExternalLabels(roots []string) []string {
	used := map[string]bool{}
	out := make([]string, len(roots))
	for i, r := range roots {
		base := strings.Trim(filepath.Base(r), ".")
		if base == "" || base == string(filepath.Separator) {
			base = "root"
		}
		label := base
		for n := 2; used[label]; n++ {
			label = fmt.Sprintf("%s-%d", base, n)
		}
		used[label] = true
		out[i] = label
	}
	return out
}

// ExternalSandboxBase is where external roots appear to the model.
const ExternalSandboxBase = "/skills"

// markExternal labels the roots that lie outside the workspace.
func (sc *scanner) markExternal() {
	if sc.workspace == "" {
		return
	}
	var ext []*scanRoot
	var paths []string
	for _, r := range sc.roots {
		if !within(sc.workspace, r.path) {
			ext = append(ext, r)
			paths = append(paths, r.path)
		}
	}
	for i, label := range ExternalLabels(paths) {
		ext[i].external = true
		ext[i].sandboxBase = ExternalSandboxBase + "/" + label
	}
}
