package eval

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/record"
)

// A cell's workspace is what its file checks and the grader read, and it
// is not part of the run directory the batch verifies. So its tree's
// digest is journaled the moment the cell's run ends (the batch journal's
// task.finished line, seen as it is written), and a grading, now or in a
// resume, first holds the workspace to it.

// maxWorkspaceDigest bounds what the digest of one workspace reads.
const maxWorkspaceDigest = 1 << 30

// treeDigest is the digest of a directory tree: every entry's path, type
// and mode, a regular file's bytes and a link's target, read beneath the
// directory without following links or blocking on a FIFO.
func treeDigest(dir string) (artifacts.Digest, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", err
	}
	defer root.Close()
	h := artifacts.NewHasher()
	h.WriteField("harness.eval-workspace/1")
	var total int64
	err = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		h.WriteField(p)
		h.WriteField(fmt.Sprintf("%o", uint32(info.Mode())))
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			t, err := root.Readlink(p)
			if err != nil {
				return err
			}
			h.WriteField(t)
		case d.Type().IsRegular():
			f, err := root.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
				return fmt.Errorf("%s changed while it was read", p)
			}
			total += info.Size()
			if total > maxWorkspaceDigest {
				return fmt.Errorf("over %d MiB", maxWorkspaceDigest>>20)
			}
			d, _, err := artifacts.DigestReader(f)
			if err != nil {
				return err
			}
			h.WriteField(string(d))
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return h.Digest(), nil
}

// cellEnded is the data of cell.ended: a cell's workspace as its run left
// it.
type cellEnded struct {
	Cell      string           `json:"cell"`
	Workspace artifacts.Digest `json:"workspaceDigest,omitempty"`
	// Problem is why the digest could not be taken.
	Problem string `json:"problem,omitempty"`
}

// workspaceWatch journals each cell's workspace digest as the batch
// journal reports its run finished.
type workspaceWatch struct {
	e    *evalRun
	mu   sync.Mutex
	err  error
	seen map[string]artifacts.Digest
}

func (w *workspaceWatch) onBatchLine(line []byte) {
	var ev struct {
		Type string `json:"type"`
		Data struct {
			Name string `json:"name"`
		} `json:"data"`
	}
	if json.Unmarshal(line, &ev) != nil || ev.Type != "task.finished" {
		return
	}
	cell := ev.Data.Name
	if !w.e.hasCell(cell) {
		return
	}
	rec := cellEnded{Cell: cell}
	d, err := treeDigest(filepath.Join(w.e.dir, record.DirEvalCells, cell))
	if err != nil {
		rec.Problem = err.Error()
	}
	rec.Workspace = d
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := w.e.journal.Append(record.EventCellEnded, rec); err != nil && w.err == nil {
		w.err = err
	}
	w.seen[cell] = d
}

func (e *evalRun) hasCell(id string) bool {
	for _, c := range e.manifest.Cells {
		if c.ID == id {
			return true
		}
	}
	return false
}
