package store

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/harness-dev/harness/outcome"
)

// stagePrefix names an install's staging directory inside the skills
// root: a dot directory, which scans never treat as a skill.
const stagePrefix = ".harness-install-"

// stageLock is held (flock) by the install working in a staging
// directory; the kernel drops it when the process dies, so a staging
// directory whose lock can be taken belongs to an install that is gone.
const stageLock = ".lock"

func holdStage(stage string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(stage, stageLock), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// removeStaleStages deletes staging directories left by installs that
// were killed (a SIGKILL mid-unpack can leave hundreds of megabytes).
// One still locked belongs to an install running now and is left alone.
func removeStaleStages(root string) {
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), stagePrefix) {
			continue
		}
		dir := filepath.Join(root, e.Name())
		lock, err := holdStage(dir)
		if err != nil {
			if !os.IsNotExist(err) {
				continue // held: another install is working there
			}
		} else {
			lock.Close()
		}
		os.RemoveAll(dir)
	}
}

// newStage makes a held staging directory in root (made if missing),
// after sweeping the stale ones; done releases and removes it.
func newStage(root string) (stage string, done func(), err error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", nil, outcome.Usage("install_root_invalid", "--to %s: %v", root, err)
	}
	removeStaleStages(root)
	if stage, err = os.MkdirTemp(root, stagePrefix); err != nil {
		return "", nil, err
	}
	held, err := holdStage(stage)
	if err != nil {
		os.RemoveAll(stage)
		return "", nil, err
	}
	return stage, func() { held.Close(); os.RemoveAll(stage) }, nil
}
