package workspace

import (
	"crypto/rand"
	"encoding/hex"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// WriteFile creates or replaces the regular file rel with data, atomically:
// the bytes go to a temporary file beside the target, are fsynced, and are
// renamed over it, so a reader never sees half a file and a crash leaves
// the old content. Parent directories are created.
func (w *Workspace) WriteFile(rel string, data []byte) error {
	// By name first, so that no directory is made inside a read-only
	// path; Create checks again on the opened parent.
	if w.IsReadOnly(filepath.Join(w.Host, filepath.FromSlash(rel))) {
		return w.readOnlyRefusal(rel)
	}
	if w.makesGit(rel) {
		return w.gitRefusal(rel)
	}
	if err := w.makesGitDir(rel); err != nil {
		return err
	}
	if dir := path.Dir(rel); dir != "." && rel != "." {
		if err := w.root.MkdirAll(dir, 0o755); err != nil {
			return w.rootError(dir, err)
		}
	}
	p, err := w.Create(rel, false)
	if err != nil {
		return err
	}
	if _, err := p.Write(data); err != nil {
		p.Abort()
		return w.rootError(rel, err)
	}
	return p.Commit()
}

// Pending is a file being written by WriteFile's rules: its bytes are in
// a temporary file beside the target until Commit renames it over the
// target, so a reader never sees half a file and a crash or Abort leaves
// the old content. Read and write it as an *os.File.
type Pending struct {
	*os.File
	w        *Workspace
	dir      *os.File
	rel      string
	tmp      string
	finished bool
}

// Create starts writing the regular file rel (its parent must exist).
// keep starts from the file's current content, for a writer that appends
// or changes it in place. The parent directory is opened and checked
// first, and the temporary file and the rename are made relative to that
// open directory: a parent swapped for a link into the run directory
// after the check cannot redirect the write. A symbolic link, or anything
// but a regular file, is never replaced.
func (w *Workspace) Create(rel string, keep bool) (*Pending, error) {
	if err := w.checkRel(rel); err != nil {
		return nil, err
	}
	if rel == "." {
		return nil, refuse("not_a_file", "the workspace root is a directory, not a file")
	}
	if w.IsProtected(rel) {
		return nil, w.protectedRefusal(rel)
	}
	dir, base := path.Dir(rel), path.Base(rel)
	d, err := w.OpenDir(dir)
	if err != nil {
		return nil, err
	}
	if err := w.checkWritable(d, rel); err != nil {
		d.Close()
		return nil, err
	}
	dfd := int(d.Fd())
	var st unix.Stat_t
	exists := false
	switch err := unix.Fstatat(dfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK:
		d.Close()
		return nil, w.linkRefusal(rel)
	case err == nil && st.Mode&unix.S_IFMT != unix.S_IFREG:
		d.Close()
		return nil, refuse("not_a_file", "%s exists and is not a regular file; write_file replaces regular files only", w.SandboxPath(rel))
	case err == nil:
		exists = true
	case err != unix.ENOENT:
		d.Close()
		return nil, w.rootError(rel, err)
	}
	var suffix [6]byte
	rand.Read(suffix[:])
	tmp := "." + base + ".harness-" + hex.EncodeToString(suffix[:])
	fd, err := unix.Openat(dfd, tmp, unix.O_CREAT|unix.O_EXCL|unix.O_RDWR|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		d.Close()
		return nil, w.rootError(rel, err)
	}
	p := &Pending{File: os.NewFile(uintptr(fd), tmp), w: w, dir: d, rel: rel, tmp: tmp}
	if keep && exists {
		ofd, err := unix.Openat(dfd, base, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			p.Abort()
			return nil, w.rootError(rel, err)
		}
		old := os.NewFile(uintptr(ofd), base)
		_, err = io.Copy(p.File, old)
		old.Close()
		if err == nil {
			_, err = p.File.Seek(0, io.SeekStart)
		}
		if err != nil {
			p.Abort()
			return nil, w.rootError(rel, err)
		}
	}
	return p, nil
}

// Commit makes the written bytes the file's content: fsync, rename over
// the target, fsync the directory.
func (p *Pending) Commit() error {
	if p.finished {
		return nil
	}
	p.finished = true
	defer p.dir.Close()
	dfd := int(p.dir.Fd())
	werr := p.File.Sync()
	if cerr := p.File.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = unix.Renameat(dfd, p.tmp, dfd, path.Base(p.rel))
	}
	if werr != nil {
		unix.Unlinkat(dfd, p.tmp, 0)
		return p.w.rootError(p.rel, werr)
	}
	return p.dir.Sync()
}

// Abort discards the written bytes; the file keeps its old content.
func (p *Pending) Abort() {
	if p.finished {
		return
	}
	p.finished = true
	p.File.Close()
	unix.Unlinkat(int(p.dir.Fd()), p.tmp, 0)
	p.dir.Close()
}

// Mkdir makes the directory rel (its parent must exist) relative to the
// checked parent, as Create does.
func (w *Workspace) Mkdir(rel string) error {
	if err := w.checkRel(rel); err != nil {
		return err
	}
	if rel == "." {
		return refuse("already_exists", "the workspace root already exists")
	}
	if w.IsProtected(rel) {
		return w.protectedRefusal(rel)
	}
	d, err := w.OpenDir(path.Dir(rel))
	if err != nil {
		return err
	}
	defer d.Close()
	if err := w.checkWritable(d, rel); err != nil {
		return err
	}
	if err := unix.Mkdirat(int(d.Fd()), path.Base(rel), 0o755); err != nil {
		return w.rootError(rel, err)
	}
	return nil
}

// checkRel refuses a relative path that is not already clean and inside
// the workspace: Create and Mkdir take paths from programs (a module's
// file system calls), which must not be cleaned into something else.
func (w *Workspace) checkRel(rel string) error {
	if rel == "" || strings.IndexByte(rel, 0) >= 0 || len(rel) > MaxPathLen || path.Clean(rel) != rel {
		return refuse("path_invalid", "%q is not a clean path relative to the workspace", rel)
	}
	if rel == ".." || strings.HasPrefix(rel, "../") || strings.HasPrefix(rel, "/") {
		return refuse("path_outside_workspace", "%s leaves the workspace", rel)
	}
	return nil
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
