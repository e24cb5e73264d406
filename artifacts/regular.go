package artifacts

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// ErrNotRegular is a path that opened as something other than a regular
// file: a directory, a device, a FIFO or a socket.
var ErrNotRegular = errors.New("not a regular file")

// TooLargeError is a file over the bound it was read under. Size is what
// the descriptor said, or -1 when the file grew past Max while it was
// read.
type TooLargeError struct {
	Size, Max int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("larger than %d bytes", e.Max)
}

// ReadRegular reads the file at path, judged by the descriptor it opened
// rather than by the path: a file swapped after a check on the path could
// otherwise be a device, a FIFO that never ends, or larger than max. A
// FIFO is refused without waiting for a writer.
func ReadRegular(path string, max int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readOpened(f, max)
}

// readOpened reads an opened file if it is regular and at most max bytes,
// counted on the descriptor and again while reading (it may grow).
func readOpened(f *os.File, max int64) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, ErrNotRegular
	}
	if fi.Size() > max {
		return nil, &TooLargeError{Size: fi.Size(), Max: max}
	}
	return ReadAtMost(f, max)
}

// ReadAtMost reads r to its end, or fails with a *TooLargeError (Size -1)
// as soon as it gives more than max bytes: a limit that silently cut the
// input would hand on part of it as if it were all.
func ReadAtMost(r io.Reader, max int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, &TooLargeError{Size: -1, Max: max}
	}
	return b, nil
}

// ReadFileAtMost reads a file an operator named, at most max bytes of it.
// Unlike ReadRegular it takes a pipe or a terminal as well (a shell's
// <(command), /dev/stdin), waiting for it as cat would: the operator chose
// it. A device that never ends fails at the bound.
func ReadFileAtMost(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadAtMost(f, max)
}

// PrivateDir refuses a cache directory that another user could write, or
// that is not this user's: whoever can write a cache decides what a later
// reader of it takes as already known. what names the cache in the
// refusal ("snapshot cache") and flag the option that chooses another
// ("--snapshot-cache").
func PrivateDir(dir, what, flag string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("%s %s is not a directory", what, dir)
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("%s %s is writable by other users (mode %v): make it private (chmod go-w) or choose another %s", what, dir, fi.Mode().Perm(), flag)
	case ok && int(st.Uid) != os.Geteuid():
		return fmt.Errorf("%s %s belongs to another user (uid %d): choose another %s", what, dir, st.Uid, flag)
	}
	return nil
}
