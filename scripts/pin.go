package scripts

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// pinned are descriptors of rule paths the helper opened itself.
type pinned struct{ fds []int }

// pin replaces every path in ps that lies inside one of the roots with
// /proc/self/fd/N of a descriptor opened beneath that root without
// following any symbolic link (openat2 RESOLVE_BENEATH and
// RESOLVE_NO_SYMLINKS). Harness checked the paths when it built the
// rules, but by name: a process that can write the workspace (another
// skill's server) could swap a directory for a link to anywhere between
// that check and Landlock's open, which follows links. Landlock opens the
// magic link as the object it names, so the rule is made on what was
// checked here, on the descriptor. A path that does not exist is left as
// it is (the rule's own handling of missing paths applies); one reached
// through a link is refused.
func (p *pinned) pin(ps *[]string, roots []string) error {
	for i, path := range *ps {
		root, rel, ok := within(path, roots)
		if !ok {
			continue
		}
		rfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open %s: %w", root, err)
		}
		fd := rfd
		if rel != "." {
			fd, err = unix.Openat2(rfd, rel, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC,
				Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
			unix.Close(rfd)
		}
		switch {
		case errors.Is(err, unix.ENOENT):
			continue
		case err != nil:
			return fmt.Errorf("%s is not reached beneath %s without a symbolic link (%v): no rule is made for it, and nothing runs", path, root, err)
		}
		p.fds = append(p.fds, fd)
		(*ps)[i] = "/proc/self/fd/" + strconv.Itoa(fd)
	}
	return nil
}

func (p *pinned) close() {
	for _, fd := range p.fds {
		unix.Close(fd)
	}
}

// within finds the root path lies in, and path relative to it.
func within(path string, roots []string) (root, rel string, ok bool) {
	for _, r := range roots {
		if path == r {
			return r, ".", true
		}
		if strings.HasPrefix(path, r+"/") {
			return r, path[len(r)+1:], true
		}
	}
	return "", "", false
}
