package grant

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/harness-dev/harness/workspace"
)

// Held paths.
//
// A git directory not named .git (the one a .git file names, as `git
// clone --separate-git-dir` and linked worktrees make; the main repository
// a commondir names; where a .git link leads) and a path a repository's
// config names are kept read-only by their path. Under bwrap that is a
// read-only bind, and a bind moves with its directory: renaming an
// ancestor carries it away, and the script can make a new directory at
// the old path, which is what git then follows. So the scan records the
// identity (device and inode, on a descriptor opened without following
// links) of each such path and of every directory above it in the
// workspace, and the check after each call stats each held path once. One
// that is no longer the same inode at the same path fails the call: the
// original goes back where the sweep's reads found it (a renamed
// directory is new to the index, so it is read whole), and whatever holds
// its path otherwise is removed. Landlock refuses the rename itself.

// fileID is a file's identity on the host.
type fileID struct{ dev, ino uint64 }

// heldPath is one control path kept by identity: the chain of the
// directories above it in the workspace, from the top, then the path.
type heldPath struct {
	rel   string
	chain []heldStep
}

type heldStep struct {
	rel string
	id  gitEntry
}

// heldLink is a link of the workspace on the way git takes to a control
// path ("gitdir: ../gitdirs/proj" with gitdirs a link): the read-only
// bind is on where it led, so pointing it elsewhere would lead git there.
type heldLink struct {
	rel, target string
	to          string // the control path it leads to, for the message
}

// hold records the held paths among paths (host paths, as ControlPaths
// gives them): those inside the workspace that are not a .git entry or a
// .gitmodules (the index follows those by name).
func (x *GitIndex) hold(root int, paths []string) {
	for _, p := range paths {
		x.holdLinks(p)
		real, err := filepath.EvalSymlinks(p)
		if err != nil || real == x.host || !workspace.Within(x.host, real) {
			continue
		}
		rel, err := filepath.Rel(x.host, real)
		if err != nil {
			continue
		}
		rel = filepath.ToSlash(rel)
		if _, ok := x.gits[rel]; ok || slices.Contains(x.mods, rel) || x.allowed(rel) || x.skipped(rel) ||
			slices.ContainsFunc(x.held, func(h heldPath) bool { return h.rel == rel }) {
			continue
		}
		h := heldPath{rel: rel}
		names := strings.Split(rel, "/")
		for i := range names {
			step := strings.Join(names[:i+1], "/")
			id := x.identify(root, step)
			if id.mode == 0 {
				h.chain = nil
				break
			}
			h.chain = append(h.chain, heldStep{rel: step, id: id})
		}
		if h.chain == nil {
			continue
		}
		for _, s := range h.chain {
			x.heldIDs[fileID{s.id.dev, s.id.ino}] = true
		}
		x.held = append(x.held, h)
	}
}

// holdLinks records the links of the workspace on the way to p, each by
// where it is (its directory resolved) and what it says. The scan runs
// before any call, so the path strings are the workspace as found.
func (x *GitIndex) holdLinks(p string) {
	if !filepath.IsAbs(p) {
		return
	}
	names := strings.Split(strings.TrimPrefix(filepath.Clean(p), "/"), "/")
	for i := range names {
		cur := "/" + filepath.Join(names[:i+1]...)
		fi, err := os.Lstat(cur)
		if err != nil {
			return
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			continue
		}
		dir, err := filepath.EvalSymlinks(filepath.Dir(cur))
		if err != nil || !workspace.Within(x.host, dir) {
			continue
		}
		target, err := os.Readlink(cur)
		if err != nil {
			return
		}
		rel, err := filepath.Rel(x.host, filepath.Join(dir, filepath.Base(cur)))
		if err != nil {
			return
		}
		rel = filepath.ToSlash(rel)
		if _, ok := x.gits[rel]; ok || x.allowed(rel) || x.skipped(rel) || slices.ContainsFunc(x.links, func(l heldLink) bool { return l.rel == rel }) {
			continue
		}
		to := p
		if r, err := filepath.Rel(x.host, p); err == nil && !strings.HasPrefix(r, "..") {
			to = filepath.ToSlash(r)
		}
		x.links = append(x.links, heldLink{rel: rel, target: target, to: to})
	}
}

func (x *GitIndex) skipped(rel string) bool {
	for _, s := range x.skip {
		if rel == s || strings.HasPrefix(rel, s+"/") {
			return true
		}
	}
	return false
}

// restoreHeld checks each held path (one stat each when nothing moved)
// and puts back what a call moved: the highest directory of its chain
// that is not where it was goes back from where the sweep's reads found
// it, replacing what holds its name, and is read again (what the call
// made inside it is looked at where it now lies). A held path still not
// itself afterwards leaves nothing at its path.
func (x *GitIndex) restoreHeld(root int, now time.Time, found *[]string) []Change {
	var made []Change
	for _, l := range x.links {
		if e := x.identify(root, l.rel); e.mode == unix.S_IFLNK && e.link == l.target {
			continue
		}
		x.touched(l.rel)
		c := Change{Path: l.rel, Note: "a link on the way to " + l.to + ", changed; made again"}
		if err := remakeLink(root, l.rel, l.target); err != nil {
			c.Note, c.Left = fmt.Sprintf("a link on the way to %s, changed; it could NOT be made again: %v", l.to, err), true
		}
		made = append(made, c)
	}
	for _, h := range x.held {
		last := h.chain[len(h.chain)-1]
		if last.id.same(x.identify(root, h.rel)) {
			continue
		}
		for _, step := range h.chain {
			if step.id.same(x.identify(root, step.rel)) {
				continue
			}
			at, ok := x.seen[fileID{step.id.dev, step.id.ino}]
			if !ok || at == step.rel || !step.id.same(x.identify(root, at)) {
				continue
			}
			x.touched(at)
			x.touched(step.rel)
			c := Change{Path: step.rel, Note: fmt.Sprintf("moved to %s; moved back", at)}
			if step.rel != h.rel {
				c.Note = fmt.Sprintf("moved to %s, and %s with it; moved back", at, h.rel)
			}
			if err := moveBack(root, at, step.rel); err != nil {
				c.Note, c.Left = fmt.Sprintf("moved to %s; it could NOT be moved back: %v", at, err), true
				made = append(made, c)
				break
			}
			made = append(made, c)
			delete(x.seen, fileID{step.id.dev, step.id.ino})
			x.walk(context.Background(), root, step.rel, now, found)
		}
		if last.id.same(x.identify(root, h.rel)) {
			continue
		}
		c := Change{Path: h.rel, Left: true}
		removed, err := clearPath(root, h.rel)
		if err != nil {
			c.Note = fmt.Sprintf("replaced; the original is not found in the workspace, and what holds its path could NOT be removed: %v", err)
		} else {
			c.Note = "replaced; the original is not found in the workspace;" + removedNote(removed) + " it could NOT be moved back"
		}
		made = append(made, c)
	}
	return made
}
