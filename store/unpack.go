package store

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/harness-dev/harness/outcome"
)

// unpack copies a directory or extracts an archive into dst, refusing
// anything that could write outside dst or smuggle in special files.
//
// Every write goes through an os.Root at dst, so no entry, however its
// name or the links before it are arranged, can create a file outside.
// Symbolic links are created last, after every file and directory, so a
// link cannot redirect a later entry; each is then resolved physically
// inside the root and the whole install refused if one leads out.
func unpack(src, dst string) error {
	fi, err := os.Stat(src)
	if err != nil {
		return outcome.Usage("install_source_invalid", "%s: %v", src, err)
	}
	w, err := newTreeWriter(dst)
	if err != nil {
		return err
	}
	defer w.root.Close()
	switch {
	case fi.IsDir():
		err = w.copyDir(src)
	case strings.HasSuffix(src, ".tar.gz") || strings.HasSuffix(src, ".tgz"):
		err = w.untar(src)
	case strings.HasSuffix(src, ".zip"):
		err = w.unzip(src)
	default:
		return outcome.Usage("install_source_invalid", "%s is neither a directory nor a .tar.gz, .tgz or .zip archive", src)
	}
	if err != nil {
		return err
	}
	return w.finishLinks()
}

// newTreeWriter writes beneath dst (made if missing) through an os.Root;
// the caller closes w.root.
func newTreeWriter(dst string) (*treeWriter, error) {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dst)
	if err != nil {
		return nil, err
	}
	return &treeWriter{root: root}, nil
}

type treeWriter struct {
	root    *os.Root
	entries int
	bytes   int64
	links   []pendingLink
}

type pendingLink struct{ name, rel, dest string }

func unsafeEntry(format string, args ...any) error {
	return outcome.Policy("install_unsafe", format, args...)
}

// target checks an entry name and returns it as a clean relative slash
// path ("." for the top). Every entry counts toward the limit, directories
// and links included: a tree of empty directories is still a flood.
func (w *treeWriter) target(name string) (string, error) {
	clean := path.Clean(strings.ReplaceAll(name, "\\", "/"))
	if path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") || strings.ContainsRune(name, 0) {
		return "", unsafeEntry("archive entry %q escapes the skill directory; nothing was installed", name)
	}
	w.entries++
	if w.entries > maxInstallEntries {
		return "", unsafeEntry("the source has more than %d entries; nothing was installed", maxInstallEntries)
	}
	return clean, nil
}

func (w *treeWriter) dir(name string) error {
	rel, err := w.target(name)
	if err != nil || rel == "." {
		return err
	}
	return w.rootErr(name, w.root.MkdirAll(rel, 0o755))
}

func (w *treeWriter) file(name string, mode fs.FileMode, r io.Reader) error {
	rel, err := w.target(name)
	if err != nil {
		return err
	}
	if rel == "." {
		return unsafeEntry("archive entry %q is a file at the top of the skill; nothing was installed", name)
	}
	if dir := path.Dir(rel); dir != "." {
		if err := w.root.MkdirAll(dir, 0o755); err != nil {
			return w.rootErr(name, err)
		}
	}
	f, err := w.root.OpenFile(rel, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode.Perm()&0o755|0o600)
	if err != nil {
		return w.rootErr(name, err)
	}
	n, err := io.Copy(f, io.LimitReader(r, maxInstallBytes-w.bytes+1))
	f.Close()
	w.bytes += n
	if w.bytes > maxInstallBytes {
		return unsafeEntry("the source holds more than %d bytes; nothing was installed", maxInstallBytes)
	}
	return err
}

// link refuses a link whose text leaves the skill on its face, and keeps
// the rest for finishLinks.
func (w *treeWriter) link(name, dest string) error {
	rel, err := w.target(name)
	if err != nil {
		return err
	}
	resolved := path.Join(path.Dir(rel), dest)
	if dest == "" || path.IsAbs(dest) || strings.ContainsRune(dest, 0) || resolved == ".." || strings.HasPrefix(resolved, "../") {
		return unsafeEntry("symbolic link %s -> %s leaves the skill; nothing was installed", name, dest)
	}
	w.links = append(w.links, pendingLink{name: name, rel: rel, dest: dest})
	return nil
}

// finishLinks creates the links, then follows each one physically within
// the root: a chain of links that together lead out (a -> ., then
// a/a/b -> ../..) is refused even though each looked harmless alone.
func (w *treeWriter) finishLinks() error {
	for _, l := range w.links {
		if dir := path.Dir(l.rel); dir != "." {
			if err := w.root.MkdirAll(dir, 0o755); err != nil {
				return w.rootErr(l.name, err)
			}
		}
		if err := w.root.Symlink(l.dest, l.rel); err != nil {
			return w.rootErr(l.name, err)
		}
	}
	for _, l := range w.links {
		if _, err := w.root.Stat(l.rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return unsafeEntry("symbolic link %s -> %s leads outside the skill once the links around it are followed; nothing was installed", l.name, l.dest)
		}
	}
	return nil
}

// rootErr turns an escape reported by the root into a refusal.
func (w *treeWriter) rootErr(name string, err error) error {
	if err == nil {
		return nil
	}
	if strings.Contains(err.Error(), "path escapes from parent") {
		return unsafeEntry("archive entry %q would be written outside the skill directory; nothing was installed", name)
	}
	if errors.Is(err, fs.ErrExist) {
		return unsafeEntry("archive entry %q appears twice or collides with a link; nothing was installed", name)
	}
	return err
}

func (w *treeWriter) copyDir(src string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (d.Name() == ".git" || d.Name() == "node_modules") {
				return fs.SkipDir
			}
			return w.dir(rel)
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			dest, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return w.link(rel, dest)
		case d.Type().IsRegular():
			// Opened without following a link and without blocking, then
			// checked on the descriptor: a file swapped for a link or a
			// FIFO after the walk saw it is refused, not read.
			f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
			if err != nil {
				return unsafeEntry("%s changed while it was copied (%v); nothing was installed", rel, err)
			}
			defer f.Close()
			info, err := f.Stat()
			if err != nil || !info.Mode().IsRegular() {
				return unsafeEntry("%s is no longer a regular file; nothing was installed", rel)
			}
			return w.file(rel, info.Mode(), f)
		}
		return unsafeEntry("%s is a special file (%s); nothing was installed", rel, d.Type())
	})
}

func (w *treeWriter) untar(src string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return outcome.Usage("install_source_invalid", "%s: %v", src, err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return outcome.Usage("install_source_invalid", "%s: %v", src, err)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			err = w.dir(h.Name)
		case tar.TypeReg:
			err = w.file(h.Name, fs.FileMode(h.Mode), tr)
		case tar.TypeSymlink:
			err = w.link(h.Name, h.Linkname)
		case tar.TypeLink:
			err = unsafeEntry("archive entry %s is a hard link (to %s); nothing was installed", h.Name, h.Linkname)
		default:
			err = unsafeEntry("archive entry %s is a special file (type %c); nothing was installed", h.Name, h.Typeflag)
		}
		if err != nil {
			return err
		}
	}
}

func (w *treeWriter) unzip(src string) error {
	zr, err := zip.OpenReader(src)
	if err != nil {
		return outcome.Usage("install_source_invalid", "%s: %v", src, err)
	}
	defer zr.Close()
	for _, zf := range zr.File {
		mode := zf.Mode()
		switch {
		case mode.IsDir():
			err = w.dir(zf.Name)
		case mode&fs.ModeSymlink != 0:
			var rc io.ReadCloser
			if rc, err = zf.Open(); err == nil {
				dest, _ := io.ReadAll(io.LimitReader(rc, 4096))
				rc.Close()
				err = w.link(zf.Name, string(dest))
			}
		case mode.IsRegular():
			var rc io.ReadCloser
			if rc, err = zf.Open(); err == nil {
				err = w.file(zf.Name, mode, rc)
				rc.Close()
			}
		default:
			err = unsafeEntry("archive entry %s is a special file; nothing was installed", zf.Name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
