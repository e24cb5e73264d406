package skills

import (
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/harness-dev/harness/artifacts"
)

// listResources walks a skill's directory (bounded, byte-wise order) and
// returns its files. dirfd is the skill's directory, opened beneath the
// root (or -1); each subdirectory is listed from its parent's descriptor,
// and one reached through a link, or that cannot be opened so, beneath
// the root's. With inline, small regular files are digested here; the
// scan's digester fills in the others.
func (sc *scanner) listResources(c candidate, s *Skill, dirfd int, inline *inlineDigest) ([]Resource, []Diagnostic, walkInfo) {
	var rs []Resource
	var w walkInfo
	var ds []Diagnostic
	add := func(code, sev, p, format string, args ...any) {
		ds = append(ds, Diagnostic{Severity: sev, Code: code, Detail: fmt.Sprintf(format, args...), Path: p})
	}
	depthNoted, full := false, false
	visited := map[string]bool{}
	// fd is dir's open descriptor, or -1: then dir is opened beneath the
	// root, as are the files in it.
	var walk func(dir, rel string, depth, fd int)
	walk = func(dir, rel string, depth, fd int) {
		w.dirs = append(w.dirs, dir)
		var entries []dirEntry
		var err error
		if fd >= 0 {
			entries, err = sc.dirs.listFD(fd, dir)
		} else {
			entries, err = sc.dirs.listBeneath(c.root, relTo(c.root.path, dir), dir)
		}
		if err != nil {
			add(CodeResourceUnreadable, SeverityWarning, dir, "cannot list directory: %v", err)
			w.uncacheable = true // what failed may not fail next time
			return
		}
		for _, e := range entries {
			if full {
				return
			}
			name := e.Name()
			p := filepath.Join(dir, name)
			r := name
			if rel != "" {
				r = rel + "/" + name
			}
			if depth == 0 && name == "SKILL.md" {
				continue
			}
			if e.Type()&fs.ModeSymlink != 0 {
				w.uncacheable = true // a link's target moves without a fingerprint moving
			}
			if e.IsDir() || e.Type()&fs.ModeSymlink != 0 {
				isDir, d := followDir(c.root, visited, p, e, CodeResourceOutsideRoot)
				if d != nil {
					ds = append(ds, *d)
					continue
				}
				if isDir {
					if strings.HasPrefix(name, ".") || name == "node_modules" {
						continue
					}
					if depth+1 > sc.limits.ResourceDepth {
						if !depthNoted {
							add(CodeScanLimitReached, SeverityWarning, p, "resource depth limit (%d) reached; files below are not indexed (raise --max-resource-depth)", sc.limits.ResourceDepth)
							depthNoted = true
						}
						continue
					}
					sub := -1 // a link's target is listed beneath the root
					if e.Type()&fs.ModeSymlink == 0 {
						sub, _ = openInDir(fd, name, dirFlags) // -1 on failure
					}
					walk(p, r, depth+1, sub)
					if sub >= 0 {
						unix.Close(sub)
					}
					continue
				}
			}
			// A plain regular file needs no stat here: the digest pass
			// measures it. Symlinks and special files are checked now.
			mode := e.Type()
			if mode&fs.ModeSymlink != 0 || !mode.IsRegular() || resourceKind(r) == KindScript {
				// Relative to the root's descriptor, as the listing was
				// made; a link is followed, as before, and its file is
				// read beneath the root or not at all.
				var st unix.Stat_t
				if err := unix.Fstatat(c.root.dirfd, relTo(c.root.path, p), &st, 0); err != nil {
					add(CodeResourceUnreadable, SeverityWarning, p, "cannot stat: %v", &fs.PathError{Op: "stat", Path: p, Err: err})
					w.uncacheable = true
					continue
				}
				mode = fileInfoMode(st.Mode) | fs.FileMode(st.Mode&0o777)
			}
			if !mode.IsRegular() {
				add(CodeResourceNotRegular, SeverityWarning, p, "not a regular file (%s); skipped and never opened", mode.Type())
				continue
			}
			if len(rs) >= sc.limits.ResourceFiles {
				add(CodeScanLimitReached, SeverityWarning, p, "resource file limit (%d) reached; the rest of the skill is not indexed (raise --max-resources)", sc.limits.ResourceFiles)
				full = true
				return
			}
			res := Resource{
				Path:        r,
				Kind:        resourceKind(r),
				HostPath:    p,
				SandboxPath: sc.sandbox(p),
				Diagnostics: []Diagnostic{},
			}
			if res.Kind == KindScript {
				x := mode&0o111 != 0
				res.Executable = &x
			}
			if path.Base(r) == "SKILL.md" {
				res.Diagnostics = append(res.Diagnostics, Diagnostic{Severity: SeverityInfo, Code: CodeNestedSkillIgnored, Detail: fmt.Sprintf("%s is inside skill '%s'; it is indexed as a resource of that skill, not loaded as a skill", r, s.Name), Path: p})
			}
			if inline != nil && e.Type()&fs.ModeSymlink == 0 {
				inline.digest(fd, name, &res)
			}
			rs = append(rs, res)
		}
	}
	walk(c.dir, "", 0, dirfd)
	slices.SortFunc(rs, func(a, b Resource) int { return strings.Compare(a.Path, b.Path) })
	if rs == nil {
		rs = []Resource{}
	}
	return rs, ds, w
}

// finishSkill runs what needs the digests: the tree digest and the
// diagnostic order. It drops the in-memory fields a snapshot must not keep.
func (sc *scanner) finishSkill(s *Skill) {
	// A tree digest the snapshot cache vouched for (cachedTree) is kept.
	if s.TreeDigest == "" {
		h, _ := sc.hashers.Get().(*artifacts.Hasher)
		if h == nil {
			h = artifacts.NewHasherSize(16 << 10)
		}
		s.TreeDigest = treeDigest(h, s.Resources)
		sc.hashers.Put(h)
	}
	s.Diagnostics = sortDiagnostics(s.Diagnostics)
	s.body, s.fsRoot, s.walked = nil, nil, nil
}
