package grant

import (
	"path/filepath"

	"github.com/harness-dev/harness/workspace"
)

// ReadOnlyPaths are the host paths a run keeps read-only whatever a skill
// is granted, because something runs or loads them on the host later,
// outside every sandbox: the workspace's git directory (a .git file's
// gitdir target too: hooks, core.hooksPath and core.fsmonitor run at the
// next git command), harness's own directory, every skill root of the run
// (skills change through the store, never by a script), and what the
// operator protects. A path inside one the operator allows
// (--allow-protected-write) is left out.
func ReadOnlyPaths(wsHost string, skillRoots, protect, allow []string) []string {
	var out []string
	add := func(p string) {
		if p == "" {
			return
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return
		}
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			abs = real
		}
		for _, a := range allow {
			if aa, err := filepath.Abs(a); err == nil && workspace.Within(aa, abs) {
				return
			}
		}
		for _, o := range out {
			if o == abs {
				return
			}
		}
		out = append(out, abs)
	}
	dotGit := filepath.Join(wsHost, ".git")
	add(dotGit)
	if target := gitdirOf(dotGit); target != "" {
		add(target)
		add(commondirOf(target))
	}
	add(filepath.Join(wsHost, ".harness"))
	for _, r := range skillRoots {
		// A root that is the workspace, or holds it, would make all of it
		// read-only: its skills are then protected by the store's digests
		// and the run-start snapshot alone.
		if abs, err := filepath.Abs(r); err == nil && !workspace.Within(abs, wsHost) {
			add(r)
		}
	}
	for _, p := range protect {
		add(p)
	}
	return out
}
