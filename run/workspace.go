package run

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
)

// maxPathLen bounds a path argument; longer ones are refused unread.
const maxPathLen = 4096

// Workspace is the directory tools may touch, as the host and the model
// see it.
type Workspace struct {
	Host    string // absolute, symlinks resolved
	Sandbox string // what the model sees, e.g. /workspace
	Cwd     string // slash path relative to Host, "." for the root
	// Protected are slash paths relative to Host (the artifacts directory,
	// a cassette being recorded) that tools can neither read nor write.
	Protected []string
}

// pathRefusal is a path a tool must not use, with the code the model and
// the artifacts see.
type pathRefusal struct {
	Code string
	Msg  string
}

func (e *pathRefusal) Error() string { return e.Msg }

// resolvePath turns a path from the model into a clean slash path relative
// to the workspace root. Sandbox-absolute paths (/workspace/...) and paths
// relative to the working directory are accepted; anything that would
// leave the workspace or touch a protected path is refused. Symlinks are
// resolved later by os.Root, which refuses escapes on its own.
func (w *Workspace) resolvePath(p string) (string, error) {
	if p == "" {
		return "", &pathRefusal{"path_invalid", "path is empty: give a path relative to the working directory or under " + w.Sandbox}
	}
	if len(p) > maxPathLen {
		return "", &pathRefusal{"path_invalid", fmt.Sprintf("path is longer than %d bytes", maxPathLen)}
	}
	if strings.IndexByte(p, 0) >= 0 {
		return "", &pathRefusal{"path_invalid", "path contains a NUL byte"}
	}
	var rel string
	switch {
	case p == w.Sandbox:
		rel = "."
	case strings.HasPrefix(p, w.Sandbox+"/"):
		rel = strings.TrimPrefix(p, w.Sandbox+"/")
	case strings.HasPrefix(p, "/"):
		return "", &pathRefusal{"path_outside_workspace", fmt.Sprintf("%s is outside the workspace: paths must be under %s or relative to the working directory", p, w.Sandbox)}
	default:
		rel = path.Join(w.Cwd, p)
	}
	rel = path.Clean(rel)
	if rel == ".." || strings.HasPrefix(rel, "../") || strings.HasPrefix(rel, "/") {
		return "", &pathRefusal{"path_outside_workspace", fmt.Sprintf("%s leaves the workspace: paths must stay under %s", p, w.Sandbox)}
	}
	if w.protected(rel) {
		return "", &pathRefusal{"path_protected", fmt.Sprintf("%s is harness's own record of runs and cannot be used by tools", w.sandboxPath(rel))}
	}
	return rel, nil
}

// protected reports whether rel is, or lies below, a protected path.
func (w *Workspace) protected(rel string) bool {
	for _, p := range w.Protected {
		if rel == p || strings.HasPrefix(rel, p+"/") {
			return true
		}
	}
	return false
}

// protectedReal checks where rel really leads once symlinks inside the
// workspace are followed: a link to the artifacts directory is as
// protected as the directory itself.
func (w *Workspace) protectedReal(rel string) error {
	real, err := filepath.EvalSymlinks(filepath.Join(w.Host, filepath.FromSlash(rel)))
	if err != nil {
		return nil // missing paths are reported by the operation itself
	}
	if !within(w.Host, real) {
		return &pathRefusal{"path_outside_workspace", fmt.Sprintf("%s resolves outside the workspace", w.sandboxPath(rel))}
	}
	r, _ := filepath.Rel(w.Host, real)
	if w.protected(filepath.ToSlash(r)) {
		return &pathRefusal{"path_protected", fmt.Sprintf("%s leads to harness's own record of runs and cannot be used by tools", w.sandboxPath(rel))}
	}
	return nil
}

func (w *Workspace) sandboxPath(rel string) string {
	if rel == "." {
		return w.Sandbox
	}
	return w.Sandbox + "/" + rel
}

// rootError maps an os.Root error to the refusal the model sees.
func (w *Workspace) rootError(rel string, err error) *pathRefusal {
	sp := w.sandboxPath(rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &pathRefusal{"file_not_found", fmt.Sprintf("%s does not exist", sp)}
	case strings.Contains(err.Error(), "path escapes from parent"):
		return &pathRefusal{"path_outside_workspace", fmt.Sprintf("%s resolves outside the workspace (through a symbolic link)", sp)}
	case errors.Is(err, fs.ErrPermission):
		return &pathRefusal{"permission_denied", fmt.Sprintf("%s: permission denied", sp)}
	}
	return &pathRefusal{"io_error", fmt.Sprintf("%s: %v", sp, err)}
}
