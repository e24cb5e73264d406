package scripts

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// What a sandbox shows of the host: mounts, the parts of a mount narrowed
// to what a skill's manifest declares, and the read-only paths inside
// them. bwrap binds them (bwrap.go); Landlock grants them by rule
// (landlock.go).

// Mount makes a host path visible in the sandbox.
type Mount struct {
	Host     string
	Sandbox  string
	Writable bool
	// Only narrows the mount to these parts of it: the rest does not
	// exist in the sandbox under bwrap and is refused by rule under
	// Landlock. nil shows the whole mount; an empty, non-nil list shows
	// an empty directory. Writable is then ignored: each part says.
	Only []Part
	// ReadOnly are slash paths relative to Host that stay read-only
	// wherever the mount or one of its parts is writable (a workspace's
	// .git, skill roots): they are bound read-only over the writable
	// view under bwrap and carved out of the writable rules under
	// Landlock. A path that is not visible stays invisible.
	ReadOnly []string
}

// Part is one visible part of a narrowed mount: a clean slash path
// relative to the mount's Host ("." is all of it).
type Part struct {
	Rel      string
	Writable bool
}

// writable reports whether any of the mount can be written, which decides
// whether a root caller needs an idmapped view of it.
func (m Mount) writable() bool {
	if m.Only == nil {
		return m.Writable
	}
	for _, p := range m.Only {
		if p.Writable {
			return true
		}
	}
	return false
}

// parts are the mount's visible parts, outermost first, so that a part
// inside another is mounted over it.
func (m Mount) parts() []Part {
	if m.Only == nil {
		return []Part{{Rel: ".", Writable: m.Writable}}
	}
	ps := slices.Clone(m.Only)
	slices.SortStableFunc(ps, func(a, b Part) int { return depth(a.Rel) - depth(b.Rel) })
	return ps
}

func depth(rel string) int {
	if rel == "." {
		return 0
	}
	return strings.Count(rel, "/") + 1
}

// under joins a slash path relative to a mount's root onto base.
func under(base, rel string) string {
	if rel == "." {
		return base
	}
	return filepath.Join(base, filepath.FromSlash(rel))
}

// visibleAt returns the part that shows rel (the innermost), if any.
func (m Mount) visibleAt(rel string) (Part, bool) {
	var best Part
	found := false
	for _, p := range m.parts() {
		if p.Rel == "." || rel == p.Rel || strings.HasPrefix(rel, p.Rel+"/") {
			best, found = p, true
		}
	}
	return best, found
}

// checkParts refuses a narrowed mount whose parts or read-only paths are,
// or pass through, a symbolic link: Landlock's rules are opened by path
// in the helper, so a link there would grant whatever it leads to.
func checkParts(mounts []Mount) error {
	for _, m := range mounts {
		rels := slices.Clone(m.ReadOnly)
		if m.Only != nil {
			for _, p := range m.Only {
				rels = append(rels, p.Rel)
			}
		}
		for _, rel := range rels {
			f, err := openBeneath(m.Host, rel)
			switch {
			case err == nil:
				f.Close()
			case errors.Is(err, os.ErrNotExist):
			case slices.Contains(m.ReadOnly, rel):
				// A read-only path that is a link gets no rule; what it
				// leads to is protected by its own name.
			default:
				return &Refusal{Code: "view_path_invalid", Msg: fmt.Sprintf("%s cannot be shown to the sandbox: %v; a path a skill is granted must be a directory or file of the workspace reached without symbolic links", under(m.Host, rel), err)}
			}
		}
	}
	return nil
}
