package workspace

import (
	"path/filepath"
	"strings"
)

// A .git anywhere in the workspace is code git runs on the host: a .git
// file names a repository whose config may set core.fsmonitor, and `git
// status` at the root follows a submodule's .git; a .git directory holds
// hooks. The ones that exist are read-only paths (KeepReadOnly); a new
// one is never made by a tool: a write or mkdir whose path passes through
// or ends in a .git is refused before anything is made.

// IsGitName reports whether name is git's directory name. Compared
// without case: on a case-insensitive file system .GIT is the same entry.
func IsGitName(name string) bool { return strings.EqualFold(name, ".git") }

// hasGitComponent reports whether the slash path rel has a .git
// component.
func hasGitComponent(rel string) bool {
	for _, c := range strings.Split(rel, "/") {
		if IsGitName(c) {
			return true
		}
	}
	return false
}

// makesGit reports whether writing rel would make or change a .git, by
// name, unless the operator allowed it.
func (w *Workspace) makesGit(rel string) bool {
	return hasGitComponent(rel) && !w.gitAllowed(filepath.Join(w.Host, filepath.FromSlash(rel)))
}

func (w *Workspace) gitAllowed(p string) bool {
	for _, a := range w.GitAllowed {
		if Within(a, p) {
			return true
		}
	}
	return false
}

func (w *Workspace) gitRefusal(rel string) *Refusal {
	return refuse("protected_path", "%s is in or is a .git: git reads its configuration and runs its hooks on the host, outside every sandbox, so tools never make or change one (the operator can allow it with --allow-protected-write PATH)", w.SandboxPath(rel))
}
