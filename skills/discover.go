package skills

// Discovery: finding the directories that hold SKILL.md under a root,
// following linked skill directories without leaving the declared roots.

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// candidate is a directory holding SKILL.md, found by discovery.
type candidate struct {
	root *scanRoot // the root its files are read through
	// index is the precedence of the root it was found in: root's own,
	// except for a linked skill read through another root.
	index int
	dir   string // host path as found under the root (not resolved)
	rel   string // where it was found, relative to that root, slash-separated
	link  *SkillLink
	// viaLink says dir was reached through a followed directory link, so
	// it is not already canonical (the root is).
	viaLink bool
	// skillFile is SKILL.md's fingerprint as discovery saw it (not
	// following a link), for the snapshot cache's check; zero when
	// SKILL.md is a link.
	skillFile statNums
}

// discover walks one root breadth-first in byte-wise order and returns
// the directories holding SKILL.md. A skill's subtree is not searched:
// everything below a skill belongs to it. Directories are listed, and
// SKILL.md looked for, beneath the root's descriptor, so a root renamed
// or replaced after it was opened cannot redirect the walk; a symbolic
// link met on the way is resolved by path and followed only inside the
// root (followDir).
func (sc *scanner) discover(ctx context.Context, r *scanRoot) ([]candidate, error) {
	type item struct {
		dir, rel string
		depth    int
		viaLink  bool
		skill    skillFile // looked up when the item is queued
	}
	found := func(it item) candidate {
		return candidate{root: r, index: r.index, dir: it.dir, rel: it.rel, viaLink: it.viaLink, skillFile: it.skill.st}
	}
	var out []candidate
	queue := []item{{dir: r.path, rel: ".", skill: isSkillDirAt(r, ".")}}
	visited := map[string]bool{r.path: true}
	// Only directories whose entries are listed count against the limit:
	// a skill directory is recognised, not searched.
	listed, limited := 0, false
	for len(queue) > 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		it := queue[0]
		queue = queue[1:]
		if it.skill.ok {
			out = append(out, found(it))
			continue
		}
		if listed == sc.limits.DiscoveryDirs {
			sc.diag(SeverityWarning, CodeScanLimitReached, it.dir, "discovery directory limit (%d) reached; %d directories are not searched (raise --max-dirs)", sc.limits.DiscoveryDirs, len(queue)+1)
			for _, rest := range queue {
				if rest.skill.ok {
					out = append(out, found(rest))
				}
			}
			return out, nil
		}
		listed++
		entries, err := sc.dirs.listBeneath(r, it.rel, it.dir)
		if err != nil {
			sc.diag(SeverityWarning, CodeSkillFileUnreadable, it.dir, "cannot list directory: %v", err)
			continue
		}
		queued := len(queue)
		// A root of twenty thousand skills otherwise grows the queue, and
		// then the candidates, by doubling: 18 MB allocated for 4 kept.
		queue = slices.Grow(queue, len(entries))
		for _, e := range entries {
			name := e.Name()
			if len(name) == len("SKILL.md") && strings.EqualFold(name, "SKILL.md") {
				// Not a skill's SKILL.md (that directory would be a skill):
				// the same name in another case, which no client loads, or
				// SKILL.md that is not a regular file.
				if name == "SKILL.md" {
					sc.diag(SeverityWarning, CodeSkillFileName, filepath.Join(it.dir, name), "%s is not a skill: its SKILL.md is not a regular file (%s); make it one", it.dir, fileKind(e.Type()))
				} else {
					sc.diag(SeverityWarning, CodeSkillFileName, filepath.Join(it.dir, name), "%s is not a skill: its file is named %s, and clients look for SKILL.md exactly; rename it to SKILL.md", it.dir, name)
				}
				continue
			}
			if strings.HasPrefix(name, ".") || name == "node_modules" {
				continue
			}
			p := filepath.Join(it.dir, name)
			rel := name
			if it.rel != "." {
				rel = it.rel + "/" + name
			}
			if e.Type()&fs.ModeSymlink != 0 {
				if c, ok := sc.linkedSkill(r, p, rel); ok {
					out = append(out, c)
					continue
				}
			}
			isDir, d := followDir(r, visited, p, e, CodeSkillOutsideRoot)
			if d != nil {
				sc.diags = append(sc.diags, *d)
			}
			if !isDir {
				continue
			}
			if it.depth+1 > sc.limits.DiscoveryDepth {
				if !limited {
					sc.diag(SeverityWarning, CodeScanLimitReached, p, "discovery depth limit (%d) reached; skills deeper than this are not found (raise --max-depth)", sc.limits.DiscoveryDepth)
					limited = true
				}
				continue
			}
			queue = append(queue, item{dir: p, rel: rel, depth: it.depth + 1, viaLink: it.viaLink || e.Type()&fs.ModeSymlink != 0})
		}
		// A root of many skills is one directory of many: looking for
		// their SKILL.md files one after another was a serial phase
		// before any skill could load.
		children := queue[queued:]
		parallelFor(0, len(children), func(i int) {
			children[i].skill = isSkillDirAt(r, children[i].rel)
		})
		skills := 0
		for _, c := range children {
			if c.skill.ok {
				skills++
			}
		}
		out = slices.Grow(out, skills)
	}
	return out, nil
}

// skillFile is what discovery learned of a directory's SKILL.md.
type skillFile struct {
	ok bool     // a regular file, or a link to one
	st statNums // its own fingerprint; zero for a link
}

func isSkillDir(dir string) skillFile {
	return skillFileAt(unix.AT_FDCWD, filepath.Join(dir, "SKILL.md"))
}

// isSkillDirAt looks for SKILL.md in directory rel of root r, beneath
// the root's descriptor rather than from its path again: a root of 2,000
// skills makes 2,000 of these lookups before any skill loads, and each
// then walks two components instead of the whole path.
func isSkillDirAt(r *scanRoot, rel string) skillFile {
	if rel == "." {
		return skillFileAt(r.dirfd, "SKILL.md")
	}
	return skillFileAt(r.dirfd, rel+"/SKILL.md")
}

// skillFileAt reports on SKILL.md at name, relative to dirfd.
func skillFileAt(dirfd int, name string) skillFile {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return skillFile{}
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		return skillFile{ok: true, st: statNumsOf(&st)}
	case unix.S_IFLNK:
		err := unix.Fstatat(dirfd, name, &st, 0)
		return skillFile{ok: err == nil && st.Mode&unix.S_IFMT == unix.S_IFREG}
	}
	return skillFile{}
}

// followDir decides whether entry p (inside root r) is a directory to
// descend into. A symlink is followed only when it resolves inside the
// same root and to a directory not in visited, so escapes and cycles are
// impossible; outsideCode names the diagnostic for an escape. visited
// belongs to one walk (discovery, or one skill's resources), which keeps
// the outcome independent of the order skills are loaded in.
func followDir(r *scanRoot, visited map[string]bool, p string, e fs.DirEntry, outsideCode string) (isDir bool, d *Diagnostic) {
	if e.Type()&fs.ModeSymlink == 0 {
		// A real directory has a unique path; cycles need symlinks.
		return e.IsDir(), nil
	}
	diag := func(sev, code, format string, args ...any) *Diagnostic {
		return &Diagnostic{Severity: sev, Code: code, Detail: fmt.Sprintf(format, args...), Path: p}
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return false, diag(SeverityWarning, outsideCode, "symbolic link does not resolve: %v", err)
	}
	if !within(r.path, real) {
		hint := ""
		if outsideCode == CodeSkillOutsideRoot {
			hint = " (to use a skill kept there, declare its root: --skills-root inside the workspace, --external-skills-root outside it)"
		}
		return false, diag(SeverityWarning, outsideCode, "symbolic link resolves to %s, outside the skills root %s; it is ignored%s", real, r.path, hint)
	}
	fi, err := os.Stat(real)
	if err != nil || !fi.IsDir() {
		return false, nil
	}
	if visited[real] || within(real, filepath.Dir(p)) {
		return false, diag(SeverityInfo, CodeSymlinkCycle, "symbolic link to %s, which is already scanned (or contains this link); not followed again", real)
	}
	visited[real] = true
	return true, nil
}

// fileKind names what a directory entry that is not a regular file is.
func fileKind(t fs.FileMode) string {
	switch {
	case t&fs.ModeSymlink != 0:
		return "a symbolic link"
	case t&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case t&fs.ModeDevice != 0:
		return "a device"
	case t&fs.ModeSocket != 0:
		return "a socket"
	case t.IsDir():
		return "a directory"
	}
	return "not a regular file"
}
