package artifacts

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"golang.org/x/sys/unix"
)

// WriteJSON encodes v as indented JSON and replaces path atomically: a
// reader sees either the old file or the complete new one, never a torn
// write, even if the process dies mid-way. The data is fsynced before the
// rename and the directory after it, so the rename survives a power cut.
func WriteJSON(path string, v any) error {
	if s, ok := v.(JSONStreamer); ok {
		return WriteStream(path, 0o644, s.StreamJSON)
	}
	b, err := EncodeJSON(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", filepath.Base(path), err)
	}
	return WriteFile(path, b, 0o644)
}

// EncodeJSON is v as WriteJSON writes it: indented, without HTML
// escapes, ending in a newline.
func EncodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// JSONStreamer is an artifact large enough that encoding it whole in
// memory would dominate a run's footprint (a registry of thousands of
// skills); it writes the same indented JSON piece by piece.
type JSONStreamer interface {
	StreamJSON(w io.Writer) error
}

// WriteFile replaces path with data atomically (temp file in the same
// directory, fsync, rename, fsync of the directory).
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return WriteStream(path, perm, writeBytes(data))
}

func writeBytes(data []byte) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	}
}

// WriteStream replaces path atomically with what write produces.
func WriteStream(path string, perm os.FileMode, write func(io.Writer) error) error {
	return writeAtomic(path, perm, write, syncBeforeRename)
}

// WriteCache replaces path atomically (mode 0600) with what write
// produces, without any fsync: for a cache, which a crash may lose (it
// then costs only time) but must never leave torn.
func WriteCache(path string, write func(io.Writer) error) error {
	return writeAtomic(path, 0o600, write, noSync)
}

// syncMode is when an atomic write fsyncs, relative to its rename.
type syncMode int

const (
	syncBeforeRename syncMode = iota
	syncAfterRename
	noSync
)

// WriteUnreferenced writes a new file that no durable record names yet
// (a tool output, before the journal line that carries its digest): like
// WriteStream, but it renames before the fsync. A reader never sees a
// partial file, and the file, its name and its directory are durable when
// it returns; only a power cut before then can leave a torn file under
// its name, which nothing refers to. On ext4 this lets one journal commit
// carry the data, the new name and the directory, where fsync before the
// rename costs a second commit for the rename.
func WriteUnreferenced(path string, perm os.FileMode, data []byte) error {
	return writeAtomic(path, perm, writeBytes(data), syncAfterRename)
}

// WriteUnsynced writes data to path atomically (a reader never sees a
// partial file) without making it durable: the caller has put the same
// bytes somewhere durable already (a tool output carried by its journal
// line) and makes the file durable later with SyncFiles.
func WriteUnsynced(path string, perm os.FileMode, data []byte) error {
	return writeAtomic(path, perm, writeBytes(data), noSync)
}

// SyncFiles makes files written with WriteUnsynced durable, with the
// directories that hold them. The fsyncs run side by side: a journaling
// file system commits concurrent fsyncs together, so n files cost a few
// commits, not n.
func SyncFiles(paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	work := make(chan string)
	errs := make(chan error, len(paths))
	var wg sync.WaitGroup
	for range min(len(paths), 16) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range work {
				errs <- syncPath(p, "sync")
			}
		}()
	}
	dirs := map[string]bool{}
	for _, p := range paths {
		work <- p
		dirs[filepath.Dir(p)] = true
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	for _, d := range slices.Sorted(maps.Keys(dirs)) {
		if err := SyncDir(d); err != nil {
			return err
		}
	}
	return nil
}

func writeAtomic(path string, perm os.FileMode, write func(io.Writer) error, mode syncMode) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmpName := tmp.Name()
	renamed := false
	defer func() {
		tmp.Close()
		if !renamed {
			os.Remove(tmpName)
		}
	}()
	// Most artifacts are a few KiB and a run writes a dozen: a larger
	// buffer costs more to allocate and clear than the writes it saves.
	var out io.Writer = tmp
	if mode == syncBeforeRename {
		out = &writeback{f: tmp}
	}
	bw := bufio.NewWriterSize(out, 32<<10)
	if err := write(bw); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if mode == syncBeforeRename {
		if err := tmp.Sync(); err != nil {
			return fmt.Errorf("sync %s: %w", path, err)
		}
	}
	if err := os.Rename(tmpName, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	renamed = true
	if mode == syncAfterRename {
		if err := tmp.Sync(); err != nil {
			return fmt.Errorf("sync %s: %w", path, err)
		}
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if mode == noSync {
		return nil
	}
	return SyncDir(dir)
}

// SyncDir makes a directory's entries durable (a rename or a new file
// in it), as an atomic write does after its rename.
func SyncDir(dir string) error { return syncPath(dir, "sync dir") }

func syncPath(path, what string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%s %s: %w", what, path, err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("%s %s: %w", what, path, err)
	}
	return nil
}

// ReadJSON decodes the artifact at path into v and checks its envelope, so
// that a file of another type or a newer version is refused rather than
// half-understood.
func ReadJSON(path, wantType string, maxVersion int, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var env Envelope
	if err := json.Unmarshal(data, &env); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if env.Type != wantType {
		return fmt.Errorf("read %s: type is %q, want %q", path, env.Type, wantType)
	}
	if env.Version < 1 || env.Version > maxVersion {
		return fmt.Errorf("read %s: version %d is not supported (this harness reads up to %d)", path, env.Version, maxVersion)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}

// writebackChunk is how much of an artifact is written before the
// kernel is asked to start putting it on disk.
const writebackChunk = 2 << 20

// writeback starts the disk write of a large artifact while the rest of
// it is still being encoded, so that the fsync before the rename waits
// for the last chunk only, not for all of it. (Measured on a 23 MB
// registry: the fsync took 7-9 ms after the whole file was written.)
type writeback struct {
	f       *os.File
	written int64
	started int64
}

func (w *writeback) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.written += int64(n)
	if w.written-w.started >= writebackChunk {
		// Only a head start: a failure here shows again, and is
		// reported, at the fsync that follows.
		_ = unix.SyncFileRange(int(w.f.Fd()), w.started, w.written-w.started, unix.SYNC_FILE_RANGE_WRITE)
		w.started = w.written
	}
	return n, err
}
