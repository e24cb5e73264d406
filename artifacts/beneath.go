package artifacts

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// maxArtifact bounds what is read of one artifact from a run directory.
const maxArtifact = 256 << 20

// ErrOutsideDir is a path that leaves the directory it must stay in, or
// goes through a symbolic link.
var ErrOutsideDir = errors.New("leaves the run directory or goes through a link")

// ReadBeneath reads the regular file rel inside dir, refusing ".." and
// absolute paths, every symbolic link, FIFOs and devices, and files over
// 256 MiB. A run directory is input once it travels (a CI artifact, a
// copy): the paths written in it are not trusted to stay in it.
func ReadBeneath(dir, rel string) ([]byte, error) {
	return ReadBeneathAtMost(dir, rel, maxArtifact)
}

// ReadBeneathAtMost is ReadBeneath with a bound of max bytes (a
// *TooLargeError past it).
func ReadBeneathAtMost(dir, rel string, max int64) ([]byte, error) {
	fd, err := openBeneath(dir, rel, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	b, err := readOpened(f, max)
	var tooLarge *TooLargeError
	if errors.Is(err, ErrNotRegular) || errors.As(err, &tooLarge) {
		return nil, fmt.Errorf("%s is %w", rel, err)
	}
	return b, err
}

// WriteBeneath replaces the file rel inside dir with data, durably and
// atomically, under ReadBeneath's rules: the directory that holds it is
// opened without following any link or leaving dir, and the file is
// created in that directory by its descriptor (a temporary name, fsync,
// rename, fsync of the directory), so no path is resolved twice.
func WriteBeneath(dir, rel string, data []byte, perm os.FileMode) error {
	pd, name, err := openParentBeneath(dir, rel)
	if err != nil {
		return err
	}
	defer unix.Close(pd)
	tmp := "." + name + ".tmp-" + strconv.FormatUint(rand.Uint64(), 36)
	fd, err := unix.Openat(pd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		return &os.PathError{Op: "create", Path: rel, Err: err}
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(pd, tmp, pd, name)
	}
	if err != nil {
		unix.Unlinkat(pd, tmp, 0)
		return &os.PathError{Op: "write", Path: rel, Err: err}
	}
	if err := unix.Fsync(pd); err != nil {
		return &os.PathError{Op: "sync", Path: filepath.Dir(rel), Err: err}
	}
	return nil
}

// OpenBeneath opens the regular file rel inside dir under ReadBeneath's
// rules, for reading or writing as flag says (os.O_* flags; with O_CREATE
// a missing file is made with perm). A link, even a dangling one, is
// ErrOutsideDir: it is refused before anything is created or written
// through it. A file that opens as anything but a regular file is
// ErrNotRegular, and a FIFO is never waited on.
func OpenBeneath(dir, rel string, flag int, perm os.FileMode) (*os.File, error) {
	var mode uint32
	if flag&os.O_CREATE != 0 {
		// openat2 refuses a mode without O_CREAT.
		mode = uint32(perm.Perm())
	}
	fd, err := openBeneath(dir, rel, flag|unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_NOCTTY, mode)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), filepath.Join(dir, rel))
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is %w", rel, ErrNotRegular)
	}
	return f, nil
}

// openBeneath opens rel inside dir with flags (and mode, for a file it
// creates), refusing every link and any path that leaves dir
// (ErrOutsideDir), and returns the descriptor.
func openBeneath(dir, rel string, flags int, mode uint32) (int, error) {
	d, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(d)
	how := unix.OpenHow{
		Flags:   uint64(flags),
		Mode:    uint64(mode),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	var fd int
	for range 3 {
		if fd, err = unix.Openat2(d, rel, &how); err != unix.EAGAIN && err != unix.EINTR {
			break
		}
	}
	switch {
	case errors.Is(err, unix.EXDEV) || errors.Is(err, unix.ELOOP):
		return -1, fmt.Errorf("%s: %w", rel, ErrOutsideDir)
	case err != nil:
		return -1, &os.PathError{Op: "open", Path: rel, Err: err}
	}
	return fd, nil
}

// DecodeArtifact decodes an artifact read as bytes, checking its envelope
// as ReadJSON does.
func DecodeArtifact(data []byte, wantType string, maxVersion int, v any) error {
	var env Envelope
	if err := json.Unmarshal(data, &env); err != nil {
		return err
	}
	if env.Type != wantType {
		return fmt.Errorf("type is %q, want %q", env.Type, wantType)
	}
	if env.Version < 1 || env.Version > maxVersion {
		return fmt.Errorf("version %d is not supported (this harness reads up to %d)", env.Version, maxVersion)
	}
	return json.Unmarshal(data, v)
}

// OpenDirBeneath opens rel as a directory inside dir under ReadBeneath's
// rules: no "..", no absolute path, no link on the way or at the end. A
// path recorded in a journal is text; this judges what it opens to, so a
// directory swapped for a link to a copy elsewhere is ErrOutsideDir
// however the text reads. What the caller reads next it reads through the
// descriptor (DirPath), so a swap after this open is not followed.
func OpenDirBeneath(dir, rel string) (*os.File, error) {
	fd, err := openBeneath(dir, rel, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), filepath.Join(dir, rel)), nil
}

// DirPath is a path that resolves to the directory d was opened as, for
// as long as d stays open, whatever is renamed or swapped at the path it
// was opened by: every *Beneath function given it opens beneath that
// very directory.
func DirPath(d *os.File) string {
	return "/proc/self/fd/" + strconv.Itoa(int(d.Fd()))
}

// ReadJSONBeneath is ReadJSON for the file rel of the directory dir, read
// under ReadBeneath's rules.
func ReadJSONBeneath(dir, rel, wantType string, maxVersion int, v any) error {
	data, err := ReadBeneath(dir, rel)
	if err != nil {
		return err
	}
	if err := DecodeArtifact(data, wantType, maxVersion, v); err != nil {
		return fmt.Errorf("read %s: %w", filepath.Join(dir, rel), err)
	}
	return nil
}

// MkdirAllBeneath makes the directory rel inside dir and every missing
// directory on the way, each made by its parent's descriptor, under
// ReadBeneath's rules: a link on the way is ErrOutsideDir, never
// followed.
func MkdirAllBeneath(dir, rel string, perm os.FileMode) error {
	rel = filepath.Clean(rel)
	if rel == "." {
		return nil
	}
	if err := MkdirAllBeneath(dir, filepath.Dir(rel), perm); err != nil {
		return err
	}
	pd, name, err := openParentBeneath(dir, rel)
	if err != nil {
		return err
	}
	defer unix.Close(pd)
	if err := unix.Mkdirat(pd, name, uint32(perm.Perm())); err != nil && err != unix.EEXIST {
		return &os.PathError{Op: "mkdir", Path: rel, Err: err}
	}
	// What is there now must be a directory reached without a link.
	fd, err := openBeneath(dir, rel, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	return unix.Close(fd)
}

// RemoveBeneath removes the file rel inside dir, reaching its directory
// under ReadBeneath's rules; a file that is not there is no error.
func RemoveBeneath(dir, rel string) error {
	pd, name, err := openParentBeneath(dir, filepath.Clean(rel))
	if err != nil {
		return err
	}
	defer unix.Close(pd)
	if err := unix.Unlinkat(pd, name, 0); err != nil && err != unix.ENOENT {
		return &os.PathError{Op: "remove", Path: rel, Err: err}
	}
	return nil
}

// openParentBeneath opens the directory that holds rel inside dir under
// ReadBeneath's rules, and names rel's last element in it.
func openParentBeneath(dir, rel string) (fd int, name string, err error) {
	parent, name := filepath.Split(rel)
	if name == "" || name == "." || name == ".." {
		return -1, "", fmt.Errorf("%s: not a file name", rel)
	}
	if parent == "" {
		parent = "."
	}
	fd, err = openBeneath(dir, parent, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	return fd, name, err
}
