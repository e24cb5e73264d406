package workspace

import (
	"path"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
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

// A directory need not be named .git to be one: where git finds no .git,
// it takes the directory itself for a git directory when it holds HEAD
// beside objects and refs (is_git_directory), and a config there with
// core.worktree makes it run core.fsmonitor for `git status`. So making
// the last of those three names in a directory is refused like making a
// .git.

// gitDirNames are the entries git's is_git_directory looks for.
var gitDirNames = [3]string{"HEAD", "objects", "refs"}

// completesGitDir reports whether making base in the open directory dfd
// would leave it holding all of HEAD, objects and refs: base is one of
// them, does not exist yet, and the other two do. Judged on the
// descriptor, so a path swapped after the check changes nothing.
func completesGitDir(dfd int, base string) bool {
	if !slices.Contains(gitDirNames[:], base) {
		return false
	}
	var st unix.Stat_t
	if unix.Fstatat(dfd, base, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
		return false
	}
	for _, n := range gitDirNames {
		if n != base && unix.Fstatat(dfd, n, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			return false
		}
	}
	return true
}

// makesGitDir refuses a write or mkdir of rel that would, on the way,
// make a directory of the workspace a git directory: each existing
// directory on the way is opened and checked for the name that follows.
func (w *Workspace) makesGitDir(rel string) error {
	if rel == "." {
		return nil
	}
	parts := strings.Split(rel, "/")
	dir := "."
	for _, name := range parts {
		d, err := w.OpenDir(dir)
		if err != nil {
			// Not there yet: what is made below it is new and holds
			// none of the three until this check sees it.
			return nil
		}
		bad := completesGitDir(int(d.Fd()), name)
		d.Close()
		sub := path.Join(dir, name)
		if bad && !w.gitAllowed(filepath.Join(w.Host, filepath.FromSlash(sub))) {
			return w.gitDirRefusal(sub)
		}
		dir = sub
	}
	return nil
}

func (w *Workspace) gitDirRefusal(rel string) *Refusal {
	return refuse("protected_path", "%s would make %s a git directory (HEAD beside objects and refs): git takes such a directory for a repository and runs what its config says on the host, outside every sandbox, so tools never make one (the operator can allow it with --allow-protected-write PATH)", w.SandboxPath(rel), w.SandboxPath(path.Dir(rel)))
}
