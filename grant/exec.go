package grant

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/harness-dev/harness/scripts"
	"github.com/harness-dev/harness/skills"
)

// ExecSet is what a manifest's exec list comes to on this machine: the
// list scripts' execute layer is given (absolute host paths, each a
// regular file or a directory whose every file may run), and what people
// are shown of it.
type ExecSet struct {
	// Paths are absolute: files, and directories.
	Paths []string
	// Shown is Paths with each directory ending in "/".
	Shown []string
	// Temp lets the call's private temporary directory run.
	Temp bool
	// Missing are entries that named nothing here.
	Missing []string
}

// ResolveExec resolves a manifest's exec entries against path (a PATH
// list, the host's): a name to the program found there, an absolute
// program to its real file, a directory to its real path. Links are
// followed, so the execute layer holds the files the kernel checks. What
// the kernel loads to start a program (its ELF or #! interpreter) the
// sandbox adds itself. Entries that do not parse are the manifest check's
// to refuse; here they name nothing.
func ResolveExec(entries []string, path string) ExecSet {
	set := ExecSet{Paths: []string{}, Shown: []string{}}
	add := func(p string, dir bool) {
		if slices.Contains(set.Paths, p) {
			return
		}
		set.Paths = append(set.Paths, p)
		if dir {
			p += "/"
		}
		set.Shown = append(set.Shown, p)
	}
	for _, s := range entries {
		e, err := skills.ExecEntryOf(s)
		if err != nil {
			set.Missing = append(set.Missing, s)
			continue
		}
		switch {
		case e.Temp:
			set.Temp = true
		case e.Name != "":
			p, err := scripts.LookupProgram(e.Name, path)
			if err != nil {
				set.Missing = append(set.Missing, s)
				continue
			}
			add(p, false)
		default:
			real, err := filepath.EvalSymlinks(e.Path)
			fi, serr := os.Stat(real)
			switch {
			case err != nil || serr != nil:
				set.Missing = append(set.Missing, s)
			case e.Dir && fi.IsDir():
				add(real, true)
			case !e.Dir && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0:
				add(real, false)
			default:
				// A directory named without its "/", or a file with
				// one: the manifest says one thing and the disk another.
				set.Missing = append(set.Missing, s)
			}
		}
	}
	return set
}

// String is the set as one line for people.
func (s ExecSet) String() string {
	parts := slices.Clone(s.Shown)
	if s.Temp {
		parts = append(parts, skills.ExecTemp+" (the call's private temporary directory)")
	}
	if len(parts) == 0 {
		return "nothing besides the runtime"
	}
	return strings.Join(parts, ", ")
}
