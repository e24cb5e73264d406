package workspace

import (
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// checkOpened refuses an open descriptor that lies in a protected path or
// outside the workspace. It asks the kernel where the descriptor's file
// really is (/proc/self/fd), so a directory swapped for a symbolic link
// between Resolve and open is caught: the check is on what was opened, not
// on the name that was asked for.
func (w *Workspace) checkOpened(f *os.File, rel string) error {
	where, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
	if err != nil {
		return refuse("path_unverifiable", "%s: cannot verify where the opened file lies (%v); /proc must be mounted", w.SandboxPath(rel), err)
	}
	where = strings.TrimSuffix(where, " (deleted)")
	if w.protectedHost(where) {
		return refuse("path_protected", "%s leads to harness's own record of runs and cannot be used by tools", w.SandboxPath(rel))
	}
	if !Within(w.Host, where) {
		return refuse("path_outside_workspace", "%s resolves outside the workspace", w.SandboxPath(rel))
	}
	if w.view != nil {
		// Judged by where the descriptor is: a link inside a granted part
		// that leads elsewhere in the workspace is refused.
		wrel, _ := w.RelOf(where)
		fi, err := f.Stat()
		if err != nil {
			return w.rootError(rel, err)
		}
		if !Covers(w.view.read, wrel) && !(fi.IsDir() && onTheWay(w.view.read, wrel)) {
			return refuse("path_not_granted", "%s is not readable for this skill: its permission manifest declares filesystem.read %s", w.SandboxPath(rel), listOrNone(w.view.read))
		}
	}
	return nil
}

// Open opens rel for reading, through the root and without blocking (a
// FIFO would otherwise wait for a writer forever), and checks the opened
// descriptor. The caller closes the file.
func (w *Workspace) Open(rel string) (*os.File, error) {
	f, err := w.root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, w.rootError(rel, err)
	}
	if err := w.checkOpened(f, rel); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// OpenDir opens rel, which must be a directory, and checks it.
func (w *Workspace) OpenDir(rel string) (*os.File, error) {
	f, err := w.Open(rel)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, w.rootError(rel, err)
	}
	if !fi.IsDir() {
		f.Close()
		return nil, refuse("not_a_directory", "%s is not a directory: use read_file", w.SandboxPath(rel))
	}
	return f, nil
}

// ReadDir lists rel, leaving out protected entries, sorted by name.
func (w *Workspace) ReadDir(rel string) ([]fs.DirEntry, error) {
	d, err := w.OpenDir(rel)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	des, err := d.ReadDir(-1)
	if err != nil {
		return nil, w.rootError(rel, err)
	}
	des = slices.DeleteFunc(des, func(de fs.DirEntry) bool { return !w.listable(path.Join(rel, de.Name())) })
	slices.SortFunc(des, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return des, nil
}

// Walk visits the tree under rel depth first in name order, calling fn
// with each entry's path relative to rel. Every directory is opened and
// checked before it is read, so a directory swapped for a link into the
// run directory is skipped, never listed. Unreadable directories are
// skipped. fn returns fs.SkipDir to skip a directory, fs.SkipAll to stop.
func (w *Workspace) Walk(rel string, fn func(sub string, de fs.DirEntry) error) error {
	err := w.walk(rel, "", fn)
	if err == fs.SkipAll {
		return nil
	}
	return err
}

func (w *Workspace) walk(rel, prefix string, fn func(string, fs.DirEntry) error) error {
	des, err := w.ReadDir(rel)
	if err != nil {
		return nil
	}
	for _, de := range des {
		sub := path.Join(prefix, de.Name())
		err := fn(sub, de)
		if err == fs.SkipDir {
			continue
		}
		if err != nil {
			return err
		}
		if de.IsDir() {
			if err := w.walk(path.Join(rel, de.Name()), sub, fn); err != nil {
				return err
			}
		}
	}
	return nil
}

// Lstat describes rel without following a final symbolic link.
func (w *Workspace) Lstat(rel string) (fs.FileInfo, error) {
	fi, err := w.root.Lstat(rel)
	if err != nil {
		return nil, w.rootError(rel, err)
	}
	return fi, nil
}

// Stat describes rel, following links inside the workspace.
func (w *Workspace) Stat(rel string) (fs.FileInfo, error) {
	f, err := w.Open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, w.rootError(rel, err)
	}
	return fi, nil
}
