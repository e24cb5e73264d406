package scripts

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"sync"
	"syscall"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/sys"
)

// WasmWriter is what a module may change in a mount: create or replace
// regular files and make directories, by the rules of whoever supplies it
// (the workspace's: write_file's). OpenWrite starts a file (keep: from
// its current content); the module's writes go to f, and commit makes
// them the file's content when the module closes it. Errors that are a
// syscall.Errno reach the module as that errno; any other as EACCES.
// Deleting, renaming, linking and changing modes are not offered.
type WasmWriter interface {
	OpenWrite(rel string, keep bool) (f *os.File, commit func() error, abort func(), err error)
	Mkdir(rel string) error
}

// writableFS is a read-only mount with WasmWriter's writes on top.
type writableFS struct {
	*sysfs.AdaptFS
	w      WasmWriter
	ending *wasmEnding
}

// wasmEnding says whether a file closed now is kept: while the module
// runs, a close is the module's own and commits unless the call was
// killed (its context ended, and wazero is closing the module); once it
// has ended, what finish said.
type wasmEnding struct {
	ctx  context.Context
	mu   sync.Mutex
	done bool
	keep bool
}

func (e *wasmEnding) finish(keep bool) {
	e.mu.Lock()
	e.done, e.keep = true, keep
	e.mu.Unlock()
}

func (e *wasmEnding) commits() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.done {
		return e.keep
	}
	return e.ctx.Err() == nil
}

const writeFlags = experimentalsys.O_WRONLY | experimentalsys.O_RDWR | experimentalsys.O_CREAT | experimentalsys.O_TRUNC | experimentalsys.O_APPEND

func errnoOf(err error) experimentalsys.Errno {
	if err == nil {
		return 0
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		return experimentalsys.UnwrapOSError(e)
	}
	return experimentalsys.EACCES
}

func (f writableFS) OpenFile(path string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	if flag&writeFlags == 0 {
		return f.AdaptFS.OpenFile(path, flag, perm)
	}
	if flag&experimentalsys.O_DIRECTORY != 0 {
		return nil, experimentalsys.EISDIR
	}
	_, errno := f.AdaptFS.Lstat(path)
	switch {
	case errno == 0 && flag&experimentalsys.O_CREAT != 0 && flag&experimentalsys.O_EXCL != 0:
		return nil, experimentalsys.EEXIST
	case errno == experimentalsys.ENOENT && flag&experimentalsys.O_CREAT == 0:
		return nil, experimentalsys.ENOENT
	}
	// Any other lookup error (a hidden or outside path) is the writer's
	// to refuse, so that the refusal is its own and recorded.
	file, commit, abort, err := f.w.OpenWrite(path, flag&experimentalsys.O_TRUNC == 0)
	if err != nil {
		return nil, errnoOf(err)
	}
	pf := &pendingFile{f: file, commit: commit, abort: abort, ending: f.ending, append: flag&experimentalsys.O_APPEND != 0,
		readable: flag&experimentalsys.O_RDWR != 0}
	if pf.append {
		file.Seek(0, io.SeekEnd)
	}
	return pf, 0
}

func (f writableFS) Mkdir(path string, _ fs.FileMode) experimentalsys.Errno {
	return errnoOf(f.w.Mkdir(path))
}

// What write_file cannot do, a module cannot either.
func (writableFS) Unlink(string) experimentalsys.Errno         { return experimentalsys.EPERM }
func (writableFS) Rmdir(string) experimentalsys.Errno          { return experimentalsys.EPERM }
func (writableFS) Rename(string, string) experimentalsys.Errno { return experimentalsys.EPERM }
func (writableFS) Link(string, string) experimentalsys.Errno   { return experimentalsys.EPERM }
func (writableFS) Symlink(string, string) experimentalsys.Errno {
	return experimentalsys.EPERM
}
func (writableFS) Chmod(string, fs.FileMode) experimentalsys.Errno { return experimentalsys.EPERM }
func (writableFS) Utimens(string, int64, int64) experimentalsys.Errno {
	return experimentalsys.EPERM
}

// pendingFile is a module's file being written; closing it commits. It
// has no Seek (fd_seek is ENOSYS): wazero's File.Seek returns an Errno,
// which go vet refuses for a method of that name, and writers that
// create or replace a file (os.WriteFile, a stream of writes, appends)
// do not seek. Pread and Pwrite take offsets.
type pendingFile struct {
	experimentalsys.UnimplementedFile
	f        *os.File
	commit   func() error
	abort    func()
	ending   *wasmEnding
	append   bool
	readable bool
	closed   bool
}

func (p *pendingFile) Dev() (uint64, experimentalsys.Errno) { return 0, 0 }
func (p *pendingFile) Ino() (sys.Inode, experimentalsys.Errno) {
	st, errno := p.Stat()
	return st.Ino, errno
}
func (p *pendingFile) IsDir() (bool, experimentalsys.Errno) { return false, 0 }
func (p *pendingFile) IsAppend() bool                       { return p.append }
func (p *pendingFile) SetAppend(on bool) experimentalsys.Errno {
	p.append = on
	return 0
}

func (p *pendingFile) Stat() (sys.Stat_t, experimentalsys.Errno) {
	fi, err := p.f.Stat()
	if err != nil {
		return sys.Stat_t{}, experimentalsys.UnwrapOSError(err)
	}
	return sys.NewStat_t(fi), 0
}

func (p *pendingFile) Read(b []byte) (int, experimentalsys.Errno) {
	if !p.readable {
		return 0, experimentalsys.EBADF
	}
	n, err := p.f.Read(b)
	if err == io.EOF {
		err = nil
	}
	return n, experimentalsys.UnwrapOSError(err)
}

func (p *pendingFile) Pread(b []byte, off int64) (int, experimentalsys.Errno) {
	if !p.readable {
		return 0, experimentalsys.EBADF
	}
	n, err := p.f.ReadAt(b, off)
	if err == io.EOF {
		err = nil
	}
	return n, experimentalsys.UnwrapOSError(err)
}

func (p *pendingFile) Write(b []byte) (int, experimentalsys.Errno) {
	if p.append {
		if _, err := p.f.Seek(0, io.SeekEnd); err != nil {
			return 0, experimentalsys.UnwrapOSError(err)
		}
	}
	n, err := p.f.Write(b)
	return n, experimentalsys.UnwrapOSError(err)
}

func (p *pendingFile) Pwrite(b []byte, off int64) (int, experimentalsys.Errno) {
	n, err := p.f.WriteAt(b, off)
	return n, experimentalsys.UnwrapOSError(err)
}

func (p *pendingFile) Truncate(size int64) experimentalsys.Errno {
	return experimentalsys.UnwrapOSError(p.f.Truncate(size))
}

// Sync and Datasync are kept for Close: the file is fsynced before it
// replaces the target.
func (p *pendingFile) Sync() experimentalsys.Errno     { return 0 }
func (p *pendingFile) Datasync() experimentalsys.Errno { return 0 }

func (p *pendingFile) Close() experimentalsys.Errno {
	if p.closed {
		return 0
	}
	p.closed = true
	if !p.ending.commits() {
		p.abort()
		return 0
	}
	return errnoOf(p.commit())
}
