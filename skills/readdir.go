package skills

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// dirLister lists directories with getdents64 into reused buffers. A
// root of 20,000 small skills lists 40,000 directories, and os.ReadDir
// spent as much on its os.File, its entries and its buffer per directory
// as on the two system calls; here a listing costs the open, the reads
// and the close, and one small allocation per name.
type dirLister struct{ bufs sync.Pool }

const direntBuf = 32 << 10

// dirEntry is one name of a listing with the type getdents reported.
type dirEntry struct {
	dir  string
	name string
	typ  fs.FileMode // type bits only, as fs.DirEntry.Type
}

func (e dirEntry) Name() string               { return e.name }
func (e dirEntry) IsDir() bool                { return e.typ.IsDir() }
func (e dirEntry) Type() fs.FileMode          { return e.typ }
func (e dirEntry) Info() (fs.FileInfo, error) { return os.Lstat(e.dir + "/" + e.name) }

// listBeneath returns the entries of directory rel of root r other than
// . and .., sorted by name as os.ReadDir returns them. The directory is
// opened beneath the root's descriptor (openat2 RESOLVE_BENEATH, or
// os.Root where the kernel has no openat2), as the root's files are read:
// one swapped for a link out of the root after it was seen fails to open
// instead of being listed. dir is its host path, which the entries and
// errors carry. The entries are values, not fs.DirEntry interfaces:
// boxing each one was an allocation per file of the scan.
func (l *dirLister) listBeneath(r *scanRoot, rel, dir string) ([]dirEntry, error) {
	fd, err := openDirBeneathFD(r, rel)
	if errors.Is(err, errNoOpenat2) {
		var f *os.File
		if f, err = r.fs.Open(rel); err == nil {
			defer f.Close()
			return l.listFD(int(f.Fd()), dir)
		}
	}
	var pe *fs.PathError
	switch {
	case err == nil:
		defer unix.Close(fd)
		return l.listFD(fd, dir)
	case escapes(err):
		return nil, fmt.Errorf("open %s: it leads out of the skills root (through a link that points outside it, or an absolute link), so it is not listed", dir)
	case errors.As(err, &pe):
		return nil, &fs.PathError{Op: "open", Path: dir, Err: pe.Err}
	}
	return nil, err
}

// listFD lists the open directory fd, whose host path is dir.
func (l *dirLister) listFD(fd int, dir string) ([]dirEntry, error) {
	buf, _ := l.bufs.Get().(*[]byte)
	if buf == nil {
		b := make([]byte, direntBuf)
		buf = &b
	}
	defer l.bufs.Put(buf)
	var out []dirEntry
	for {
		n, err := unix.Getdents(fd, *buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "readdirent", Path: dir, Err: err}
		}
		if n <= 0 {
			break
		}
		out = appendDirents(out, dir, fd, (*buf)[:n])
	}
	slices.SortFunc(out, func(a, b dirEntry) int { return strings.Compare(a.name, b.name) })
	return out, nil
}

// appendDirents decodes linux_dirent64 records: inode (8 bytes), offset
// (8), record length (2), type (1), then the name, NUL-terminated. A
// record that does not fit what the kernel returned ends the batch.
func appendDirents(out []dirEntry, dir string, fd int, b []byte) []dirEntry {
	for len(b) >= 19 {
		reclen := int(binary.NativeEndian.Uint16(b[16:18]))
		if reclen < 19 || reclen > len(b) {
			break
		}
		typ, name := b[18], b[19:reclen]
		b = b[reclen:]
		if i := slices.Index(name, 0); i >= 0 {
			name = name[:i]
		}
		if len(name) == 0 || string(name) == "." || string(name) == ".." {
			continue
		}
		e := dirEntry{dir: dir, name: string(name)}
		switch typ {
		case unix.DT_DIR:
			e.typ = fs.ModeDir
		case unix.DT_REG:
		case unix.DT_LNK:
			e.typ = fs.ModeSymlink
		case unix.DT_FIFO:
			e.typ = fs.ModeNamedPipe
		case unix.DT_SOCK:
			e.typ = fs.ModeSocket
		case unix.DT_CHR:
			e.typ = fs.ModeDevice | fs.ModeCharDevice
		case unix.DT_BLK:
			e.typ = fs.ModeDevice
		default:
			// DT_UNKNOWN: some file systems do not say; ask. A name gone
			// meanwhile is left out, as os.ReadDir leaves it out.
			var gone bool
			if e.typ, gone = typeAt(fd, e.name); gone {
				continue
			}
		}
		out = append(out, e)
	}
	return out
}

// typeAt is the type of name in directory fd, not following a link:
// irregular when it cannot be told (a listing then treats it as neither
// a file nor a directory), gone when the name no longer exists.
func typeAt(fd int, name string) (typ fs.FileMode, gone bool) {
	var st unix.Stat_t
	if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fs.ModeIrregular, err == unix.ENOENT
	}
	return fileInfoMode(st.Mode), false
}

func fileInfoMode(m uint32) fs.FileMode {
	switch m & unix.S_IFMT {
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFREG:
		return 0
	case unix.S_IFLNK:
		return fs.ModeSymlink
	case unix.S_IFIFO:
		return fs.ModeNamedPipe
	case unix.S_IFSOCK:
		return fs.ModeSocket
	case unix.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		return fs.ModeDevice
	}
	return fs.ModeIrregular
}
