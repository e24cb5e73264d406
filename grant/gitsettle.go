package grant

import (
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/harness-dev/harness/workspace"
)

// Change is one thing a call did to a git control path and what the
// check after it did about it.
type Change struct {
	// Path is the entry, a slash path relative to the workspace.
	Path string
	// Note says what was found and done; "" for a .git made and removed.
	Note string
	// Left is set when it could not be wholly undone: git run there may
	// still run what the call planted, or a repository is not where it
	// was. The run cannot go on in such a workspace.
	Left bool
}

// maxShownPath is how much of a path a message shows: a script can make
// one of kilobytes.
const maxShownPath = 200

func (c Change) String() string {
	p := c.Path
	if len(p) > maxShownPath {
		// Cut on bytes, shown as valid UTF-8: a name cut mid-rune loses
		// that rune, never the message's encoding.
		p = fmt.Sprintf("%s…%s (a path of %d bytes)", strings.ToValidUTF8(p[:maxShownPath/2], ""), strings.ToValidUTF8(p[len(p)-maxShownPath/4:], ""), len(p))
	}
	if c.Note == "" {
		return p
	}
	return p + " (" + c.Note + ")"
}

// Strings are the changes as a person reads them.
func Strings(cs []Change) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.String()
	}
	return out
}

// gitEntry is what a .git (or a held path, or a directory above one) was
// when the run found it, so that one moved (an ancestor renamed under
// bwrap) can be put back and a link replaced can be made again.
type gitEntry struct {
	dev, ino uint64
	mode     uint32 // S_IFMT bits
	link     string // the target of a .git that is a link
}

func (e gitEntry) same(o gitEntry) bool {
	return e.mode != 0 && e.mode == o.mode && e.dev == o.dev && e.ino == o.ino
}

// identify describes the entry rel, never following it (zero when absent
// or reached only through a link).
func (x *GitIndex) identify(root int, rel string) gitEntry {
	var st unix.Stat_t
	if fstatat(root, rel, &st) != nil {
		return gitEntry{}
	}
	e := gitEntry{dev: st.Dev, ino: st.Ino, mode: st.Mode & unix.S_IFMT}
	if e.mode == unix.S_IFLNK {
		e.link, _ = os.Readlink(filepath.Join(x.host, filepath.FromSlash(rel)))
	}
	return e
}

// settle deals with the .git entries found in changed directories: a
// known one where it was is left; one that is a known entry moved (same
// inode) goes back; anything else is removed. A known entry no longer
// where it was and not found moved leaves nothing at its path: git then
// finds no repository there rather than what the script put in its place.
func (x *GitIndex) settle(root int, found []string) []Change {
	var made []Change
	moved := map[string]string{} // known relative path -> where it is now
	for _, rel := range found {
		if x.allowed(rel) {
			continue
		}
		id := x.identify(root, rel)
		if id.mode == 0 {
			// Gone since it was found: moved back with a held directory
			// above it, or removed with what held such a path.
			continue
		}
		if known, ok := x.gits[rel]; ok && known.same(id) {
			continue
		}
		if from, ok := x.knownAs(id); ok && from != rel {
			moved[from] = rel
			continue
		}
		c := Change{Path: rel}
		if err := removeChecked(root, rel); err != nil {
			c.Note, c.Left = fmt.Sprintf("it could NOT be removed: %v", err), true
		}
		made = append(made, c)
		x.touched(rel)
	}
	for _, rel := range slices.Sorted(maps.Keys(x.gits)) {
		known := x.gits[rel]
		if x.allowed(rel) || known.same(x.identify(root, rel)) {
			continue
		}
		x.touched(rel)
		if at, ok := moved[rel]; ok {
			// The entry was moved with an ancestor: whatever now holds its
			// name goes, and it goes back.
			x.touched(at)
			if err := moveBack(root, at, rel); err != nil {
				removed, _ := clearPath(root, rel)
				made = append(made, Change{Path: rel, Note: fmt.Sprintf("moved to %s;%s it could NOT be moved back: %v", at, removedNote(removed), err), Left: true})
				continue
			}
			made = append(made, Change{Path: rel, Note: fmt.Sprintf("moved to %s; moved back", at)})
			continue
		}
		if known.mode == unix.S_IFLNK {
			c := Change{Path: rel, Note: "a link, replaced; made again"}
			if err := remakeLink(root, rel, known.link); err != nil {
				c.Note, c.Left = fmt.Sprintf("a link, replaced; it could NOT be made again: %v", err), true
			} else if again := x.identify(root, rel); again.mode == unix.S_IFLNK && again.link == known.link {
				// The link made again is a new inode: known as it is now,
				// the next sweep that reads its directory leaves it alone.
				x.gits[rel] = again
			}
			made = append(made, c)
			continue
		}
		removed, err := clearPath(root, rel)
		note := "gone: not found in the workspace;" + removedNote(removed) + " it could NOT be moved back"
		if err != nil {
			note = fmt.Sprintf("gone: not found in the workspace; what holds its path could NOT be removed either: %v", err)
		}
		made = append(made, Change{Path: rel, Note: note, Left: true})
	}
	return made
}

func removedNote(removed string) string {
	if removed == "" {
		return ""
	}
	return " what held its path (" + removed + ") was removed;"
}

func remakeLink(root int, rel, target string) error {
	dir, err := makeParent(root, rel)
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	if err := removeIn(dir, path.Base(rel)); err != nil {
		return err
	}
	return unix.Symlinkat(target, dir, path.Base(rel))
}

// unbare undoes each git directory made since the scan that is not a
// .git (HEAD beside objects and refs, which git accepts as a repository
// where it finds no .git): its HEAD is removed, after which git no longer
// takes the directory for one. A HEAD that cannot be removed is said so.
// A repository the run knows, moved and moved back, is none of these.
func (x *GitIndex) unbare(root int) []Change {
	var made []Change
	for _, rel := range x.newBare {
		if x.bare[rel] || x.allowed(rel) {
			continue
		}
		id := x.identify(root, rel)
		if id.mode == 0 || x.isHeld(id) {
			continue
		}
		head := path.Join(rel, "HEAD")
		c := Change{Path: head, Note: "made " + rel + " a git directory: HEAD beside objects and refs; HEAD removed"}
		if err := removeChecked(root, head); err != nil {
			c.Note, c.Left = fmt.Sprintf("made %s a git directory: HEAD beside objects and refs; HEAD could NOT be removed: %v", rel, err), true
		}
		made = append(made, c)
		x.touched(head)
	}
	x.newBare = nil
	return made
}

// isHeld reports whether id is a held path's own (a git directory moved
// and moved back is the run's, not one the call made). A directory above
// one is not: HEAD made in it is the call's.
func (x *GitIndex) isHeld(id gitEntry) bool {
	return slices.ContainsFunc(x.held, func(h heldPath) bool { return h.chain[len(h.chain)-1].id.same(id) })
}

// touched marks the directory of rel to be read again at the next sweep:
// the sweep itself changed it.
func (x *GitIndex) touched(rel string) {
	if d, ok := x.dirs[path.Dir(rel)]; ok {
		d.racy = true
		x.dirs[path.Dir(rel)] = d
	}
}

func (x *GitIndex) allowed(rel string) bool {
	p := filepath.Join(x.host, filepath.FromSlash(rel))
	for _, a := range x.allow {
		if workspace.Within(a, p) {
			return true
		}
	}
	return false
}

func (x *GitIndex) knownAs(id gitEntry) (string, bool) {
	if id.mode == 0 {
		return "", false
	}
	for rel, known := range x.gits {
		if known.same(id) && known.mode != unix.S_IFLNK {
			return rel, true
		}
	}
	return "", false
}

// unreadableChanges are the directories the sweep could not open even
// after giving their owner the rights back: what they hold is unknown.
func (x *GitIndex) unreadableChanges() []Change {
	var made []Change
	for _, rel := range x.unreadable {
		made = append(made, Change{Path: rel, Note: "a directory the check after the call cannot open: what it holds is not known to be harmless", Left: true})
	}
	x.unreadable = nil
	return made
}
