package scripts

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// noexecMounts makes every mount noexec (MOUNT_ATTR_NOEXEC) but those
// whose mount point is in keep (the view's programs and libraries, the
// helper): the sandbox's /tmp and /dev, the workspace and the skill's
// files, writable or not. A program the script writes there, or finds
// there, can then neither be executed nor mapped executable, so the
// dynamic loader, which the script may run, cannot load it either. It
// runs before Landlock, which forbids a confined process to mount.
//
// bwrap gives the sandbox a user namespace of its own inside the one that
// owns its mounts, so CAP_SYS_ADMIN there (bwrap --cap-add) cannot change
// them: the calling thread moves to a mount namespace of its own (a copy,
// owned by the sandbox's user namespace), which is the one everything it
// then starts or execs inherits. The thread stays locked to the calling
// goroutine for good.
func noexecMounts(keep []string) error {
	runtime.LockOSThread()
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("noexec: a mount namespace of its own: %w", err)
	}
	// thread-self: /proc/self would show the namespace of the main
	// thread, which did not move.
	f, err := os.Open("/proc/thread-self/mountinfo")
	if err != nil {
		return fmt.Errorf("noexec: %w", err)
	}
	defer f.Close()
	var mounts []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 {
			continue
		}
		p := unescapeMountinfo(fields[4])
		if !slices.Contains(strings.Split(fields[5], ","), "noexec") && !slices.Contains(keep, p) {
			mounts = append(mounts, p)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("noexec: %w", err)
	}
	for _, p := range mounts {
		err := unix.MountSetattr(unix.AT_FDCWD, p, unix.AT_SYMLINK_NOFOLLOW, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOEXEC})
		if err != nil {
			return fmt.Errorf("make %s noexec: %w", p, err)
		}
	}
	return nil
}

// unescapeMountinfo undoes the octal escapes (\040 for a space) the kernel
// writes in a mount point.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
