package artifacts

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

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
	d, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(d)
	how := unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NONBLOCK | unix.O_NOCTTY,
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
		return nil, fmt.Errorf("%s: %w", rel, ErrOutsideDir)
	case err != nil:
		return nil, &os.PathError{Op: "open", Path: rel, Err: err}
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", rel)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxArtifact+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxArtifact {
		return nil, fmt.Errorf("%s is larger than %d bytes", rel, maxArtifact)
	}
	return b, nil
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
