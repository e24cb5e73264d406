package grant

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// The sweep changes the host, outside every sandbox, where a link the
// script left would lead the change elsewhere (a link in place of a
// submodule's directory, pointing at a nested repository, would have a
// move back land in it). So every change is made relative to a parent
// directory opened without following any link, and names one entry; a
// link is removed as a link, never resolved.

func openRootDir(host string) (int, error) {
	return unix.Open(host, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
}

// openBeneath opens the directory rel below root for listing, refusing a
// link anywhere on the way: what is read is what lies in the workspace.
func openBeneath(root int, rel string) (int, error) {
	if rel == "." {
		return unix.Openat(root, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	}
	return unix.Openat2(root, rel, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
}

func fstatat(root int, rel string, st *unix.Stat_t) error {
	if rel == "." {
		return unix.Fstat(root, st)
	}
	// A path through a link is not the entry the index knows.
	fd, err := unix.Openat2(root, rel, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err == unix.ELOOP {
		// The final component is a link (O_PATH|O_NOFOLLOW opens a link
		// itself, so this is a link on the way).
		return errors.New("through a link")
	}
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Fstat(fd, st)
}

// unlock gives the owner read, write and search on the directory rel when
// the harness user owns it: a script running as that user can take them
// away to hide what it made there from the check after the call, and git
// needs only search to reach it. Reports whether the mode was changed.
func unlock(root int, rel string) bool {
	if rel == "." {
		return false
	}
	fd, err := unix.Openat2(root, rel, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR || int(st.Uid) != os.Geteuid() {
		return false
	}
	return unix.Chmod(fmt.Sprintf("/proc/self/fd/%d", fd), (st.Mode&0o7777)|0o700) == nil
}

// removeChecked removes the entry rel (a whole tree, never following
// links) and reports whether it is gone.
func removeChecked(root int, rel string) error {
	err := removeOnce(root, rel)
	if err != nil && unlock(root, path.Dir(rel)) || err != nil && unlock(root, rel) {
		// A script running as the harness user can take write away
		// from the directory or the entry to keep it; give it back once.
		unlock(root, rel)
		err = removeOnce(root, rel)
	}
	return err
}

func removeOnce(root int, rel string) error {
	dir, err := openBeneath(root, path.Dir(rel))
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	return removeIn(dir, path.Base(rel))
}

// removeIn removes the entry name of the open directory dir: a link or
// file is unlinked, a directory removed with all it holds, neither ever
// followed; gone is success.
func removeIn(dir int, name string) error {
	var st unix.Stat_t
	switch err := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case err == unix.ENOENT:
		return nil
	case err != nil:
		return err
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		if err := unix.Unlinkat(dir, name, 0); err != nil && err != unix.ENOENT {
			return err
		}
	default:
		r, err := os.OpenRoot(fmt.Sprintf("/proc/self/fd/%d", dir))
		if err != nil {
			return err
		}
		defer r.Close()
		if err := r.RemoveAll(name); err != nil {
			return err
		}
	}
	if err := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != unix.ENOENT {
		return errors.New("still there")
	}
	return nil
}

// clearPath removes what holds rel, or the first entry on the way to it
// that is not a directory (a link or file the script left in place of
// one): afterwards nothing git could follow lies at rel. It names what it
// removed ("" for nothing).
func clearPath(root int, rel string) (string, error) {
	dir, err := unix.Dup(root)
	if err != nil {
		return "", err
	}
	defer func() { unix.Close(dir) }()
	names := strings.Split(rel, "/")
	for i, name := range names {
		at := strings.Join(names[:i+1], "/")
		var st unix.Stat_t
		switch err := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); {
		case err == unix.ENOENT:
			return "", nil
		case err != nil:
			return "", err
		}
		if i == len(names)-1 || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			err := removeIn(dir, name)
			if err != nil && unlock(root, path.Dir(at)) {
				err = removeIn(dir, name)
			}
			return at, err
		}
		next, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return "", err
		}
		unix.Close(dir)
		dir = next
	}
	return "", nil
}

// makeParent opens the directory rel lies in, making the directories on
// the way that are missing and replacing with one whatever else holds
// their names (a link or file the script left there).
func makeParent(root int, rel string) (int, error) {
	dir, err := unix.Dup(root)
	if err != nil {
		return -1, err
	}
	if d := path.Dir(rel); d != "." {
		for _, name := range strings.Split(d, "/") {
			var st unix.Stat_t
			if err := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR {
				removeIn(dir, name)
			}
			unix.Mkdirat(dir, name, 0o755)
			next, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			unix.Close(dir)
			if err != nil {
				return -1, err
			}
			dir = next
		}
	}
	return dir, nil
}

// moveBack moves the entry at back to rel: whatever holds rel (a link is
// unlinked, never followed) goes first, the directories on the way are
// made again. When the entry lies inside what holds rel (a script can move
// a directory into the one it makes at the old name), it is taken out
// first: removing what holds rel must never remove the original with it.
func moveBack(root int, at, rel string) error {
	from, err := openBeneath(root, path.Dir(at))
	if err != nil {
		return err
	}
	defer func() { unix.Close(from) }()
	to, err := makeParent(root, rel)
	if err != nil {
		return err
	}
	defer unix.Close(to)
	name := path.Base(at)
	if strings.HasPrefix(at, rel+"/") {
		aside, err := renameAside(from, name, to, path.Base(rel))
		if err != nil {
			return fmt.Errorf("it lies inside what holds %s and cannot be taken out of it: %w", rel, err)
		}
		unix.Close(from)
		if from, err = unix.Dup(to); err != nil {
			return fmt.Errorf("it was taken out to %s: %w", path.Join(path.Dir(rel), aside), err)
		}
		name = aside
	}
	if err := removeIn(to, path.Base(rel)); err != nil {
		if name != path.Base(at) {
			return fmt.Errorf("what holds %s cannot be removed (the original is kept at %s): %w", rel, path.Join(path.Dir(rel), name), err)
		}
		return fmt.Errorf("what holds %s cannot be removed: %w", rel, err)
	}
	return unix.Renameat(from, name, to, path.Base(rel))
}

// renameAside moves the entry name of from into to under a new name made
// from base that nothing holds (never replacing an entry), and returns it.
func renameAside(from int, name string, to int, base string) (string, error) {
	var err error
	for i := 0; i < 100; i++ {
		aside := fmt.Sprintf(".%s.harness-moveback-%d", base, i)
		if err = unix.Renameat2(from, name, to, aside, unix.RENAME_NOREPLACE); err != unix.EEXIST {
			return aside, err
		}
	}
	return "", err
}
