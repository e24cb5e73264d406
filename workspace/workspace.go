package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// MaxPathLen bounds a path argument; longer ones are refused unread.
const MaxPathLen = 4096

// DefaultSandbox is where the workspace appears to the model and to
// sandboxed processes.
const DefaultSandbox = "/workspace"

// Workspace is the directory tools may touch, as the host and the model
// see it, with the root every access goes through.
type Workspace struct {
	Host    string // absolute, symlinks resolved
	Sandbox string // what the model sees, e.g. /workspace
	Cwd     string // slash path relative to Host, "." for the root
	// Protected are absolute host paths (symlinks resolved) that tools can
	// neither read nor write, even when they lie inside the workspace.
	Protected []string
	// ReadOnly are absolute host paths (symlinks resolved) that tools may
	// read but never write (readonly.go).
	ReadOnly []string
	// GitAllowed are absolute host paths where tools may make a .git
	// (the operator's --allow-protected-write); nowhere else (gitpath.go).
	GitAllowed []string

	root *os.Root
	view *view // nil: the whole workspace
}

// Open opens the workspace root. protected paths are made absolute and
// resolved; one that does not exist yet is kept as given.
func Open(host, sandbox, cwd string, protected []string) (*Workspace, error) {
	root, err := os.OpenRoot(host)
	if err != nil {
		return nil, fmt.Errorf("open workspace: %w", err)
	}
	w := &Workspace{Host: host, Sandbox: sandbox, Cwd: cwd, root: root}
	for _, p := range protected {
		if p == "" {
			continue
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			root.Close()
			return nil, fmt.Errorf("protected path %s: %w", p, err)
		}
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			abs = real
		}
		w.Protected = append(w.Protected, abs)
	}
	return w, nil
}

// Close releases the root.
func (w *Workspace) Close() error { return w.root.Close() }

// Refusal is a path a tool must not use, with the code the model and the
// artifacts see.
type Refusal struct {
	Code string
	Msg  string
}

func (e *Refusal) Error() string { return e.Msg }

func refuse(code, format string, args ...any) *Refusal {
	return &Refusal{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// Within reports whether p is base or lies below it. Both must be clean
// absolute paths.
func Within(base, p string) bool {
	if p == base {
		return true
	}
	return strings.HasPrefix(p, strings.TrimSuffix(base, string(filepath.Separator))+string(filepath.Separator))
}

// Resolve turns a path from the model into a clean slash path relative to
// the workspace root. Sandbox-absolute paths (/workspace/...) and paths
// relative to the working directory are accepted; anything that would
// leave the workspace, or names a protected path, is refused here already.
// Symbolic links are dealt with when the path is opened.
func (w *Workspace) Resolve(p string) (string, error) {
	if p == "" {
		return "", refuse("path_invalid", "path is empty: give a path relative to the working directory or under %s", w.Sandbox)
	}
	if len(p) > MaxPathLen {
		return "", refuse("path_invalid", "path is longer than %d bytes", MaxPathLen)
	}
	if strings.IndexByte(p, 0) >= 0 {
		return "", refuse("path_invalid", "path contains a NUL byte")
	}
	var rel string
	switch {
	case p == w.Sandbox:
		rel = "."
	case strings.HasPrefix(p, w.Sandbox+"/"):
		rel = strings.TrimPrefix(p, w.Sandbox+"/")
	case strings.HasPrefix(p, "/"):
		return "", refuse("path_outside_workspace", "%s is outside the workspace: paths must be under %s or relative to the working directory", p, w.Sandbox)
	default:
		rel = path.Join(w.Cwd, p)
	}
	rel = path.Clean(rel)
	if rel == ".." || strings.HasPrefix(rel, "../") || strings.HasPrefix(rel, "/") {
		return "", refuse("path_outside_workspace", "%s leaves the workspace: paths must stay under %s", p, w.Sandbox)
	}
	if w.protectedHost(filepath.Join(w.Host, filepath.FromSlash(rel))) {
		return "", w.protectedRefusal(rel)
	}
	return rel, nil
}

// IsProtected reports whether rel names a protected path or lies below
// one, by name alone (listings use it to leave such entries out).
func (w *Workspace) IsProtected(rel string) bool {
	return w.protectedHost(filepath.Join(w.Host, filepath.FromSlash(rel)))
}

// listable reports whether a listing shows rel: not protected, and in
// the view.
func (w *Workspace) listable(rel string) bool {
	return !w.IsProtected(rel) && w.inView(rel)
}

func (w *Workspace) protectedHost(p string) bool {
	for _, pr := range w.Protected {
		if Within(pr, p) {
			return true
		}
	}
	return false
}

func (w *Workspace) protectedRefusal(rel string) *Refusal {
	return refuse("path_protected", "%s is harness's own record of runs and cannot be used by tools", w.SandboxPath(rel))
}

// SandboxPath is rel as the model sees it.
func (w *Workspace) SandboxPath(rel string) string {
	if rel == "." {
		return w.Sandbox
	}
	return w.Sandbox + "/" + rel
}

// RelOf maps a host path inside the workspace to its relative slash path;
// ok is false for a path outside it.
func (w *Workspace) RelOf(host string) (string, bool) {
	if !Within(w.Host, host) {
		return "", false
	}
	rel, err := filepath.Rel(w.Host, host)
	if err != nil {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// rootError maps an os.Root error to the refusal the model sees.
func (w *Workspace) rootError(rel string, err error) *Refusal {
	var r *Refusal
	if errors.As(err, &r) {
		return r
	}
	sp := w.SandboxPath(rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return refuse("file_not_found", "%s does not exist", sp)
	case strings.Contains(err.Error(), "path escapes from parent"):
		if w.leadsToProtected(rel) {
			return w.protectedRefusal(rel)
		}
		return refuse("path_outside_workspace", "%s resolves outside the workspace (through a symbolic link)", sp)
	case errors.Is(err, fs.ErrPermission):
		return refuse("permission_denied", "%s: permission denied", sp)
	case errors.Is(err, fs.ErrExist):
		return refuse("already_exists", "%s already exists", sp)
	}
	return refuse("io_error", "%s: %v", sp, err)
}

// leadsToProtected reports whether rel, with every link followed, names a
// protected path. It only chooses the message for a path already refused:
// a path string proves nothing about what a later open would find.
func (w *Workspace) leadsToProtected(rel string) bool {
	real, err := filepath.EvalSymlinks(filepath.Join(w.Host, filepath.FromSlash(rel)))
	return err == nil && w.protectedHost(real)
}

// AsRefusal returns err as a *Refusal, wrapping other errors as io_error.
// A nil error is a Refusal with no code, so a caller (or a test) comparing
// codes sees a mismatch instead of a nil dereference.
func AsRefusal(err error) *Refusal {
	if err == nil {
		return &Refusal{Msg: "no refusal: the operation succeeded"}
	}
	var r *Refusal
	if errors.As(err, &r) {
		return r
	}
	return &Refusal{Code: "io_error", Msg: err.Error()}
}
