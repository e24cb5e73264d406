package scripts

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// When harness runs as root, scripts do not: they run as this host user
// ("nobody"), so root-owned files (/etc/shadow, keys under /root, the
// operator's other files) are out of reach by plain permissions, not only
// by what the sandbox happens to mount.
const (
	sandboxUID = 65534
	sandboxGID = 65534
)

// dropsPrivileges reports whether scripts run as sandboxUID rather than as
// the caller: only a root caller can and must switch.
func dropsPrivileges(backend Backend) bool {
	return os.Geteuid() == 0 && backend != BackendNone
}

// idmappedMount shows a directory whose files root owns as owned by the
// sandbox user, at a private mount point: a script running as that user
// can write the workspace, and every file it creates is owned by root on
// disk, as the operator's own writes would be. Files owned by anyone else
// stay read-only to it.
type idmappedMount struct{ target string }

func newIDMappedMount(src string) (*idmappedMount, error) {
	ns, err := sharedMappingNamespace()
	if err != nil {
		return nil, err
	}
	fd, err := unix.OpenTree(unix.AT_FDCWD, src, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
	if err != nil {
		return nil, fmt.Errorf("open_tree %s: %w", src, err)
	}
	defer unix.Close(fd)
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP, Userns_fd: uint64(ns.Fd())}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		return nil, fmt.Errorf("idmapped mount of %s: %w (the file system or kernel does not support idmapped mounts)", src, err)
	}
	sweepStaleMounts()
	target, err := MkdirReachable(fmt.Sprintf("%s%d-", mountPrefix, os.Getpid()))
	if err != nil {
		return nil, err
	}
	if err := unix.MoveMount(fd, "", unix.AT_FDCWD, target, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		os.Remove(target)
		return nil, fmt.Errorf("attach idmapped mount: %w", err)
	}
	return &idmappedMount{target: target}, nil
}

// mappingNamespace is a user namespace whose root is the sandbox user on
// the host: attached to a mount, it makes root's files appear as the
// sandbox user's. The namespace outlives the short process that made it
// for as long as the returned file is open.
func mappingNamespace() (*os.File, error) {
	cmd := exec.Command("/bin/sh", "-c", "read x")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: sandboxUID, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: sandboxGID, Size: 1}},
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("user namespace for the idmapped mount: %w", err)
	}
	defer func() { in.Close(); cmd.Wait() }()
	return os.Open(fmt.Sprintf("/proc/%d/ns/user", cmd.Process.Pid))
}

// sharedMappingNamespace is made once per process and kept open: the
// mapping never changes, and making it starts a process (about 7 ms, half
// of what a sandboxed call as root cost before bwrap even started).
var sharedMappingNamespace = sync.OnceValues(mappingNamespace)

// sweepStaleMounts clears what killed harness processes left, once per
// process: their mount points cannot multiply while this one runs.
var sweepStaleMounts = sync.OnceFunc(removeStaleMounts)

// mountPrefix names idmapped mount points: harness-ws-<pid>-<random>, so
// that one left by a harness that was killed can be told apart.
const mountPrefix = "harness-ws-"

// removeStaleMounts unmounts and removes the mount points of harness
// processes that no longer exist (killed while a script ran).
func removeStaleMounts() {
	for _, base := range []string{os.TempDir(), "/tmp", "/var/tmp"} {
		entries, _ := os.ReadDir(base)
		for _, e := range entries {
			rest, ok := strings.CutPrefix(e.Name(), mountPrefix)
			if !ok || !e.IsDir() {
				continue
			}
			pidText, _, _ := strings.Cut(rest, "-")
			pid, err := strconv.Atoi(pidText)
			if err != nil || pid <= 0 || syscall.Kill(pid, 0) != syscall.ESRCH {
				continue // not ours to judge, or its harness is alive
			}
			p := filepath.Join(base, e.Name())
			unix.Unmount(p, unix.MNT_DETACH)
			os.Remove(p)
		}
	}
}

func (m *idmappedMount) remove() {
	unix.Unmount(m.target, unix.MNT_DETACH)
	os.Remove(m.target)
}

// reachableByOthers checks that a user who is neither owner nor group
// can execute p: every directory above it searchable, the file itself
// executable. A runtime under /root is not, and the sandbox user would
// fail to start it with a confusing error.
func reachableByOthers(p string) error {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return err
	}
	if !filepath.IsAbs(real) {
		return fmt.Errorf("%q is not an absolute path", p)
	}
	if err := searchableByOthers(filepath.Dir(real)); err != nil {
		return err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&0o001 == 0 {
		return fmt.Errorf("%s is not executable by other users (mode %v)", real, fi.Mode().Perm())
	}
	return nil
}

// rebase replaces the prefix old of p with new.
func rebase(p, old, new string) string {
	if p == old {
		return new
	}
	if rest, ok := strings.CutPrefix(p, old+"/"); ok {
		return new + "/" + rest
	}
	return p
}

// MkdirReachable makes a temporary directory (mode 0700, for the caller to
// loosen) in a place every user can reach: the sandbox user must traverse
// to staged skills, its private tmp and the workspace mount point, and
// TMPDIR may be private (a test's work directory, a user's ~/tmp).
func MkdirReachable(prefix string) (string, error) {
	var lastErr error
	for _, base := range []string{os.TempDir(), "/tmp", "/var/tmp"} {
		if err := searchableByOthers(base); err != nil {
			lastErr = err
			continue
		}
		return os.MkdirTemp(base, prefix)
	}
	return "", fmt.Errorf("no temporary directory every user can reach: %w", lastErr)
}

func searchableByOthers(dir string) error {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return err
	}
	return eachAncestor(real, func(d string) error {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("%s is not searchable by other users", d)
		}
		return nil
	})
}

// reachableCopy gives an executable the sandbox user cannot reach a name
// it can: a hard link (or, across file systems, a copy) in a directory
// every user can enter. The caller removes it after the call.
func reachableCopy(bin string) (string, func(), error) {
	real, err := filepath.EvalSymlinks(bin)
	if err != nil {
		return "", nil, err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", nil, err
	}
	if fi.Mode().Perm()&0o001 == 0 {
		return "", nil, fmt.Errorf("%s is not executable by other users (mode %v)", real, fi.Mode().Perm())
	}
	dir, err := MkdirReachable("harness-rt-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	if err := os.Chmod(dir, 0o755); err != nil {
		cleanup()
		return "", nil, err
	}
	dst := filepath.Join(dir, filepath.Base(real))
	if err := os.Link(real, dst); err != nil {
		if err := copyExecutable(real, dst); err != nil {
			cleanup()
			return "", nil, err
		}
	}
	return dst, cleanup, nil
}

func copyExecutable(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
