package skills

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// readRegular reads a regular file through the root, refusing anything
// else (a FIFO would block, a device could be endless) and anything over
// max bytes.
func readRegular(root *scanRoot, rel string, max int64) ([]byte, error) {
	// A raw descriptor: an os.File per read registers with the runtime
	// poller and a finalizer, which costs more than reading a small file
	// (the audit reads every file of thousands of skills).
	fd, err := openBeneathFD(root, rel)
	if errors.Is(err, errNoOpenat2) {
		f, ferr := openNoBlock(root.fs, rel)
		if ferr != nil {
			return nil, ferr
		}
		defer f.Close()
		return readRegularFD(int(f.Fd()), max)
	}
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	return readRegularFD(fd, max)
}

// readIn is readRegular for file name of the open directory dirfd,
// which is rel beneath the root: opened from the directory when that
// works (see openInDir), else beneath the root.
func readIn(root *scanRoot, dirfd int, name, rel string, max int64) ([]byte, error) {
	if fd, err := openInDir(dirfd, name, fileFlags); err == nil {
		defer unix.Close(fd)
		return readRegularFD(fd, max)
	}
	return readRegular(root, rel, max)
}

func readRegularFD(fd int, max int64) ([]byte, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("not a regular file (mode %o)", st.Mode&unix.S_IFMT)
	}
	if st.Size > max {
		return nil, errTooLarge
	}
	buf := make([]byte, st.Size+1) // one more: a file that grew is noticed
	n := 0
	for n < len(buf) {
		want := len(buf) - n
		m, err := unix.Read(fd, buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if m == 0 {
			break
		}
		n += m
		if atEOF(m, want, int64(n), st.Size) {
			break
		}
	}
	if int64(n) > max {
		return nil, errTooLarge
	}
	return buf[:n], nil
}

// atEOF reports whether a read of want bytes that returned got has
// reached the end of a regular file of the size fstat gave: a short read
// that ends exactly there. A regular file's read comes back short only at
// its end, so the read of 0 bytes that would confirm it (one syscall per
// file, a tenth of snapshotting many small skills) tells nothing more; a
// file that grew meanwhile fills the read instead, and is read on.
func atEOF(got, want int, total, size int64) bool {
	return got < want && total == size
}

// openNoBlock opens for reading without waiting: a FIFO swapped in after
// the mode check would otherwise block the scan until a writer appears.
func openNoBlock(root *os.Root, rel string) (*os.File, error) {
	return root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}

// openBeneath opens rel for reading with one openat2 call that the kernel
// confines to the root (RESOLVE_BENEATH: no "..", absolute or symlink
// escape), which costs a single syscall where os.Root walks every path
// component. Kernels without openat2 fall back to os.Root.
func openBeneath(r *scanRoot, rel string) (*os.File, error) {
	fd, err := openBeneathFD(r, rel)
	if err == nil {
		return os.NewFile(uintptr(fd), filepath.Join(r.path, rel)), nil
	}
	if errors.Is(err, errNoOpenat2) {
		return openNoBlock(r.fs, rel)
	}
	return nil, err
}

var errNoOpenat2 = errors.New("openat2 unavailable")

// openBeneathFD is openBeneath for callers that manage the descriptor.
func openBeneathFD(r *scanRoot, rel string) (int, error) {
	return openat2Beneath(r, rel, fileFlags)
}

// openDirBeneathFD opens directory rel of the root for listing, confined
// as openBeneath is.
func openDirBeneathFD(r *scanRoot, rel string) (int, error) {
	return openat2Beneath(r, rel, dirFlags)
}

func openat2Beneath(r *scanRoot, rel string, flags int) (int, error) {
	return openat2At(r.dirfd, rel, flags)
}

// Flags of a file opened to be read, and of a directory opened to be
// listed.
const (
	fileFlags = unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NONBLOCK | unix.O_NOCTTY
	dirFlags  = unix.O_RDONLY | unix.O_CLOEXEC | unix.O_DIRECTORY
)

// openInDir opens name in the open directory dirfd, confined to that
// directory as openat2Beneath confines to the root. A loaded skill's
// files are opened from its directory this way: one path component to
// look up instead of all of them from the root, which measured 2.0
// against 3.3 µs per open and close for a file two directories down.
// Any failure sends the caller back to the open beneath the root, which
// gives the answer and the error of record (a link out of the skill's
// directory may still stay inside the root).
func openInDir(dirfd int, name string, flags int) (int, error) {
	if dirfd < 0 {
		return -1, errNoDir
	}
	return openat2At(dirfd, name, flags)
}

var errNoDir = errors.New("no directory descriptor")

func openat2At(dirfd int, rel string, flags int) (int, error) {
	how := unix.OpenHow{Flags: uint64(flags), Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS}
	for range 3 {
		fd, err := unix.Openat2(dirfd, rel, &how)
		switch {
		case err == nil:
			return fd, nil
		case errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR):
			continue // a concurrent rename; the kernel asks to retry
		case errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM):
			// No openat2 (old kernel, or a seccomp filter that denies it).
			return -1, errNoOpenat2
		default:
			return -1, &os.PathError{Op: "openat2", Path: rel, Err: err}
		}
	}
	return -1, &os.PathError{Op: "openat2", Path: rel, Err: unix.EAGAIN}
}
