package grant

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"

	"golang.org/x/sys/unix"

	"github.com/harness-dev/harness/workspace"
)

// maxWriteEntries bounds the entries one grant's write paths are checked
// for hard links before a call (a variable so a test can lower it).
var maxWriteEntries = 100_000

// checkHardLinks refuses a write path that holds a regular file with more
// than one name. A hard link is the file itself, not a pointer to it: one
// that already sits in a write path with its other name elsewhere (outside
// the write paths, outside the workspace) is written through by every
// backend, since the sandbox grants the name it sees. The sandbox cannot
// make one to a file it does not show (link(2) across mounts fails, and
// Landlock refuses the reparenting), so only a link made before the call
// matters, and each call checks. Directories are opened beneath the
// workspace's descriptor and each entry is judged by fstatat on its
// parent's descriptor, without following links; the read-only paths inside
// are not looked at, since nothing can write them.
func checkHardLinks(ws *workspace.Workspace, skill string, write []string) error {
	left := maxWriteEntries
	for _, rel := range write {
		d, err := ws.OpenDir(rel)
		if err != nil {
			pr := workspace.AsRefusal(err)
			return &Refusal{Code: pr.Code, Msg: fmt.Sprintf("skill %s declares filesystem.write %s: %s", skill, rel, pr.Msg)}
		}
		found, err := walkLinks(d, rel, ws.ReadOnlyRel(), &left)
		d.Close()
		switch {
		case errors.Is(err, errTooMany):
			return &Refusal{Code: "write_path_too_large", Msg: fmt.Sprintf("skill %s declares filesystem.write %s, whose files are more than the %d harness checks for hard links before a call; nothing was run. Declare narrower write paths", skill, rel, maxWriteEntries)}
		case err != nil:
			return &Refusal{Code: "grant_failed", Msg: fmt.Sprintf("skill %s declares filesystem.write %s, which could not be checked for hard links: %v; nothing was run", skill, rel, err)}
		case found != "":
			return &Refusal{Code: "write_path_hardlink", Msg: fmt.Sprintf("skill %s declares filesystem.write %s, which holds %s, a hard link (a file with another name elsewhere): writing it would change that file too, wherever it is; nothing was run. Make it a file of its own (copy it to a new name and rename the copy over it) or remove it", skill, rel, ws.SandboxPath(found))}
		}
	}
	return nil
}

var errTooMany = errors.New("too many entries")

// walkLinks returns the first regular file under d (the directory rel)
// with more than one link, or "", leaving out the readOnly paths.
func walkLinks(d *os.File, rel string, readOnly []string, left *int) (string, error) {
	fd := int(d.Fd())
	for {
		names, err := d.Readdirnames(512)
		if err == io.EOF || len(names) == 0 && err == nil {
			return "", nil
		}
		if err != nil {
			return "", err
		}
		for _, name := range names {
			if *left--; *left < 0 {
				return "", errTooMany
			}
			sub := path.Join(rel, name)
			if workspace.Covers(readOnly, sub) {
				continue
			}
			var st unix.Stat_t
			if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				if errors.Is(err, unix.ENOENT) {
					continue // gone since it was listed
				}
				return "", fmt.Errorf("%s: %w", sub, err)
			}
			switch st.Mode & unix.S_IFMT {
			case unix.S_IFREG:
				if st.Nlink > 1 {
					return sub, nil
				}
			case unix.S_IFDIR:
				cfd, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
				if err != nil {
					if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
						continue // replaced since it was looked at
					}
					return "", fmt.Errorf("%s: %w", sub, err)
				}
				child := os.NewFile(uintptr(cfd), sub)
				found, err := walkLinks(child, sub, readOnly, left)
				child.Close()
				if found != "" || err != nil {
					return found, err
				}
			}
		}
	}
}
