package workspace

import (
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Read-only paths and narrowed views.
//
// A read-only path (git's directory, the skill roots, what the operator
// names with --protect) can be read but never written through the
// workspace: git runs hooks and configured commands from it on the host,
// outside every sandbox, and a skill root is loaded by the next run. A
// narrowed view is the workspace as a skill's permission manifest grants
// it: only the declared parts are visible, and only the declared writable
// parts can be written.

// KeepReadOnly adds host paths that tools may read but not write. Paths
// are made absolute and, where they exist, resolved.
func (w *Workspace) KeepReadOnly(paths ...string) error {
	for _, p := range paths {
		if p == "" {
			continue
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return err
		}
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			abs = real
		}
		w.ReadOnly = append(w.ReadOnly, abs)
	}
	return nil
}

// KeepReadOnlyLater adds read-only paths that are still being found
// (the walk for git's control paths runs beside the run start): the
// first check that needs them waits for find, once. A view made with
// Narrow shares them.
func (w *Workspace) KeepReadOnlyLater(find func() []string) {
	w.later = &laterPaths{find: find}
}

type laterPaths struct {
	once  sync.Once
	find  func() []string
	paths []string
}

// readOnly are the read-only paths, waiting for those still being found.
func (w *Workspace) readOnly() []string {
	if w.later == nil {
		return w.ReadOnly
	}
	w.later.once.Do(func() {
		for _, p := range w.later.find() {
			abs, err := filepath.Abs(p)
			if err != nil {
				continue
			}
			if real, err := filepath.EvalSymlinks(abs); err == nil {
				abs = real
			}
			if !slices.Contains(w.ReadOnly, abs) && !slices.Contains(w.later.paths, abs) {
				w.later.paths = append(w.later.paths, abs)
			}
		}
	})
	return append(w.ReadOnly[:len(w.ReadOnly):len(w.ReadOnly)], w.later.paths...)
}

// IsReadOnly reports whether the host path p is, or lies below, a
// read-only path.
func (w *Workspace) IsReadOnly(p string) bool {
	for _, r := range w.readOnly() {
		if Within(r, p) {
			return true
		}
	}
	return false
}

// ReadOnlyRel are the read-only paths inside the workspace, relative to it.
func (w *Workspace) ReadOnlyRel() []string {
	var out []string
	for _, r := range w.readOnly() {
		if rel, ok := w.RelOf(r); ok {
			out = append(out, rel)
		}
	}
	return out
}

func (w *Workspace) readOnlyRefusal(rel string) *Refusal {
	return refuse("protected_path", "%s is kept read-only: git, harness and the next run use it on the host, outside every sandbox (the operator can allow it with --allow-protected-write PATH)", w.SandboxPath(rel))
}

// checkWritable refuses a write of base into the opened directory d (rel
// is the name asked for): by where d really is, not by the name.
func (w *Workspace) checkWritable(d *os.File, rel string) error {
	where, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(d.Fd())))
	if err != nil {
		return refuse("path_unverifiable", "%s: cannot verify where the opened directory lies (%v); /proc must be mounted", w.SandboxPath(rel), err)
	}
	target := filepath.Join(strings.TrimSuffix(where, " (deleted)"), path.Base(rel))
	if w.IsReadOnly(target) {
		return w.readOnlyRefusal(rel)
	}
	if trel, ok := w.RelOf(target); ok && hasGitComponent(trel) && !w.gitAllowed(target) {
		return w.gitRefusal(rel)
	}
	if completesGitDir(int(d.Fd()), path.Base(rel)) && !w.gitAllowed(target) {
		return w.gitDirRefusal(rel)
	}
	if w.view != nil {
		if trel, ok := w.RelOf(target); !ok || !Covers(w.view.write, trel) {
			return refuse("path_not_granted", "%s is not writable for this skill: its permission manifest declares filesystem.write %s", w.SandboxPath(rel), listOrNone(w.view.write))
		}
	}
	return nil
}

// view is what a narrowed workspace shows: slash paths relative to the
// workspace.
type view struct{ read, write []string }

// Narrow returns the workspace as a skill's manifest grants it: read and
// write are clean relative paths ("." the whole workspace); write paths
// are readable too. The result shares w's root; closing it closes w.
func (w *Workspace) Narrow(read, write []string) *Workspace {
	n := *w
	n.view = &view{read: append(append([]string{}, read...), write...), write: append([]string{}, write...)}
	return &n
}

// Covers reports whether the slash path rel is one of parts or lies below
// one ("." covers everything).
func Covers(parts []string, rel string) bool {
	for _, p := range parts {
		if p == "." || rel == p || strings.HasPrefix(rel, p+"/") {
			return true
		}
	}
	return false
}

// onTheWay reports whether rel is a directory on the way to a part: shown
// so that the part can be reached, listed with only what leads there.
func onTheWay(parts []string, rel string) bool {
	for _, p := range parts {
		if rel == "." || strings.HasPrefix(p, rel+"/") {
			return true
		}
	}
	return false
}

// inView reports whether rel is visible in a narrowed view (always, when
// the workspace is not narrowed).
func (w *Workspace) inView(rel string) bool {
	return w.view == nil || Covers(w.view.read, rel) || onTheWay(w.view.read, rel)
}

func listOrNone(ps []string) string {
	if len(ps) == 0 {
		return "nothing"
	}
	return "[" + strings.Join(ps, ", ") + "]"
}

// MkdirAll makes the directory rel and its parents, unless rel is or lies
// in a read-only path; the result is checked on its descriptor.
func (w *Workspace) MkdirAll(rel string) error {
	if err := w.checkRel(rel); err != nil {
		return err
	}
	if w.IsReadOnly(filepath.Join(w.Host, filepath.FromSlash(rel))) {
		return w.readOnlyRefusal(rel)
	}
	if w.makesGit(rel) {
		return w.gitRefusal(rel)
	}
	if err := w.makesGitDir(rel); err != nil {
		return err
	}
	if w.IsProtected(rel) {
		return w.protectedRefusal(rel)
	}
	if rel != "." {
		if err := w.root.MkdirAll(rel, 0o755); err != nil {
			return w.rootError(rel, err)
		}
	}
	d, err := w.OpenDir(rel)
	if err != nil {
		return err
	}
	return d.Close()
}
