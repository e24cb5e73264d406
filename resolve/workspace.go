package resolve

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/workspace"
)

// Workspace is --workspace as an absolute path with every link resolved:
// it must exist and be a directory.
func Workspace(dir string) (string, error) {
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", outcome.Usage("workspace_invalid", "--workspace %s: %v", dir, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", outcome.Usage("workspace_invalid", "--workspace %s does not exist: create it or pass an existing directory", dir)
		}
		return "", outcome.Usage("workspace_invalid", "--workspace %s: %v", dir, err)
	}
	st, err := os.Stat(real)
	if err != nil {
		return "", outcome.Usage("workspace_invalid", "--workspace %s: %v", dir, err)
	}
	if !st.IsDir() {
		return "", outcome.Usage("workspace_invalid", "--workspace %s is not a directory", dir)
	}
	return real, nil
}

// Cwd checks --cwd: relative to the workspace and inside it after
// symlinks are evaluated.
func Cwd(ws, cwd string) (string, error) {
	if cwd == "" || cwd == "." {
		return ".", nil
	}
	if filepath.IsAbs(cwd) {
		return "", outcome.Usage("cwd_invalid", "--cwd %s must be relative to the workspace", cwd)
	}
	real, err := filepath.EvalSymlinks(filepath.Join(ws, cwd))
	if err != nil {
		return "", outcome.Usage("cwd_invalid", "--cwd %s: %v", cwd, err)
	}
	if !workspace.Within(ws, real) {
		return "", outcome.Usage("cwd_outside_workspace", "--cwd must stay within the workspace: %s resolves to %s", cwd, real)
	}
	st, err := os.Stat(real)
	if err != nil || !st.IsDir() {
		return "", outcome.Usage("cwd_invalid", "--cwd %s is not a directory in the workspace", cwd)
	}
	rel, _ := filepath.Rel(ws, real)
	return filepath.ToSlash(rel), nil
}

// SandboxPath maps a host path inside the workspace to the model's view.
func SandboxPath(ws, host string) string {
	rel, err := filepath.Rel(ws, host)
	if err != nil || rel == "." {
		return workspace.DefaultSandbox
	}
	return path.Join(workspace.DefaultSandbox, filepath.ToSlash(rel))
}
