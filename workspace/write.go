package workspace

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"path"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// WriteFile creates or replaces the regular file rel with data, atomically:
// the bytes go to a temporary file beside the target, are fsynced, and are
// renamed over it, so a reader never sees half a file and a crash leaves
// the old content. Parent directories are created. The parent directory is
// opened and checked first, and the temporary file and the rename are made
// relative to that open directory: a parent swapped for a link into the run
// directory after the check cannot redirect the write.
func (w *Workspace) WriteFile(rel string, data []byte) error {
	if rel == "." {
		return refuse("not_a_file", "the workspace root is a directory, not a file")
	}
	dir, base := path.Dir(rel), path.Base(rel)
	if dir != "." {
		if err := w.root.MkdirAll(dir, 0o755); err != nil {
			return w.rootError(dir, err)
		}
	}
	d, err := w.OpenDir(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	dfd := int(d.Fd())
	var st unix.Stat_t
	switch err := unix.Fstatat(dfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return w.linkRefusal(rel)
	case err == nil && st.Mode&unix.S_IFMT != unix.S_IFREG:
		return refuse("not_a_file", "%s exists and is not a regular file; write_file replaces regular files only", w.SandboxPath(rel))
	case err != nil && err != unix.ENOENT:
		return w.rootError(rel, err)
	}
	var suffix [6]byte
	rand.Read(suffix[:])
	tmp := "." + base + ".harness-" + hex.EncodeToString(suffix[:])
	fd, err := unix.Openat(dfd, tmp, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return w.rootError(rel, err)
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = unix.Renameat(dfd, tmp, dfd, base)
	}
	if werr != nil {
		unix.Unlinkat(dfd, tmp, 0)
		return w.rootError(rel, werr)
	}
	return d.Sync()
}

// linkRefusal refuses to replace a symbolic link, saying where it leads.
func (w *Workspace) linkRefusal(rel string) error {
	real, err := filepath.EvalSymlinks(filepath.Join(w.Host, filepath.FromSlash(rel)))
	switch {
	case err == nil && w.protectedHost(real):
		return w.protectedRefusal(rel)
	case err == nil && !Within(w.Host, real):
		return refuse("path_outside_workspace", "%s resolves outside the workspace (through a symbolic link)", w.SandboxPath(rel))
	}
	return refuse("not_a_file", "%s is a symbolic link; write_file replaces regular files only", w.SandboxPath(rel))
}
