package workspace

import (
	"io/fs"
	"os"
	"path"
)

// FS is the workspace as a read-only fs.FS, for sandboxes that run in
// harness's own process (WebAssembly modules). Every open goes through the
// root and is checked on the opened descriptor, like Open; protected
// entries are left out of listings and refused by name.
func (w *Workspace) FS() fs.FS { return workspaceFS{w} }

type workspaceFS struct{ w *Workspace }

func (f workspaceFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if !f.w.listable(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
	}
	file, err := f.w.Open(name)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: asFSError(err)}
	}
	return &workspaceFile{f: file, w: f.w, rel: name}, nil
}

// asFSError maps a refusal to the error a guest program understands.
func asFSError(err error) error {
	switch AsRefusal(err).Code {
	case "file_not_found":
		return fs.ErrNotExist
	case "io_error":
		return err
	}
	return fs.ErrPermission
}

// workspaceFile hides protected entries from a directory listing. It
// wraps the *os.File rather than embedding it: os.File's Readdir would list
// them, and consumers prefer it when it is there.
type workspaceFile struct {
	f   *os.File
	w   *Workspace
	rel string
}

func (f *workspaceFile) Stat() (fs.FileInfo, error)                { return f.f.Stat() }
func (f *workspaceFile) Read(b []byte) (int, error)                { return f.f.Read(b) }
func (f *workspaceFile) ReadAt(b []byte, off int64) (int, error)   { return f.f.ReadAt(b, off) }
func (f *workspaceFile) Seek(off int64, whence int) (int64, error) { return f.f.Seek(off, whence) }
func (f *workspaceFile) Close() error                              { return f.f.Close() }

func (f *workspaceFile) ReadDir(n int) ([]fs.DirEntry, error) {
	for {
		des, err := f.f.ReadDir(n)
		kept := des[:0]
		for _, de := range des {
			if f.w.listable(path.Join(f.rel, de.Name())) {
				kept = append(kept, de)
			}
		}
		// A batch of only protected entries must not read as the end.
		if len(kept) > 0 || err != nil || n <= 0 || len(des) == 0 {
			return kept, err
		}
	}
}
