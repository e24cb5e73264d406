package tools

import (
	"errors"
	"os"
	"slices"
	"sync"
	"syscall"

	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/workspace"
)

// wasmWrites lets a WebAssembly module write the workspace by write_file's
// rules (workspace.Create, workspace.Mkdir) and keeps what it wrote and
// what was refused for the execution record.
type wasmWrites struct {
	ws *workspace.Workspace

	mu       sync.Mutex
	written  []string
	refusals []outcome.Record
}

func (w *wasmWrites) OpenWrite(rel string, keep bool) (*os.File, func() error, func(), error) {
	p, err := w.ws.Create(rel, keep)
	if err != nil {
		return nil, nil, nil, w.refused(err)
	}
	commit := func() error {
		if err := p.Commit(); err != nil {
			return w.refused(err)
		}
		w.wrote(rel)
		return nil
	}
	return p.File, commit, p.Abort, nil
}

func (w *wasmWrites) Mkdir(rel string) error {
	if err := w.ws.Mkdir(rel); err != nil {
		return w.refused(err)
	}
	w.wrote(rel + "/")
	return nil
}

func (w *wasmWrites) wrote(rel string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !slices.Contains(w.written, rel) {
		w.written = append(w.written, rel)
	}
}

// refused records a refusal and gives the module the errno a program
// would get for it.
func (w *wasmWrites) refused(err error) error {
	r := workspace.AsRefusal(err)
	w.mu.Lock()
	if len(w.refusals) < 100 { // a module retrying in a loop must not grow the record without bound
		w.refusals = append(w.refusals, outcome.Record{Code: r.Code, Message: r.Msg})
	}
	w.mu.Unlock()
	switch r.Code {
	case "file_not_found":
		return syscall.ENOENT
	case "already_exists":
		return syscall.EEXIST
	case "not_a_file":
		return syscall.EISDIR
	case "path_invalid":
		return syscall.EINVAL
	case "io_error":
		return syscall.EIO
	}
	if errors.Is(err, syscall.ENOSPC) {
		return syscall.ENOSPC
	}
	return syscall.EACCES
}

func (w *wasmWrites) done() ([]string, []outcome.Record) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.written, w.refusals
}
