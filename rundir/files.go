package rundir

import (
	"errors"
	"os"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
)

// Every file of a run directory (run.json, the journal, the lock,
// result.json, every artifact) is opened beneath the directory without
// following a link. Harness writes only regular files there, so a link is
// an edit: followed, it would have a reader verify and show a file from
// elsewhere, and a writer (a journal append, the lock) create or write a
// file wherever it points. Readers and writers alike refuse it before
// anything is read as the run's or written.

// linked is the refusal for a file of the run directory that is a link.
func linked(name string) error {
	return tampered("%s is a symbolic link or leads outside the run directory (harness writes only regular files there)", name)
}

// asTampered turns a link met opening name into the tampering it is,
// and leaves every other error as it was.
func asTampered(name string, err error) error {
	if errors.Is(err, artifacts.ErrOutsideDir) {
		return linked(name)
	}
	return err
}

// openFile opens the file name of the run directory dir, as
// artifacts.OpenBeneath does; a link is tampering.
func openFile(dir, name string, flag int, perm os.FileMode) (*os.File, error) {
	f, err := artifacts.OpenBeneath(dir, name, flag, perm)
	return f, asTampered(name, err)
}

// ReadManifest reads dir's run.json for a command that takes a run
// directory: a link is tampering (exit 5), any other failure says dir is
// not a run directory (exit 2).
func ReadManifest(dir string) (record.Manifest, error) {
	m, err := record.ReadManifest(dir)
	switch {
	case errors.Is(err, artifacts.ErrOutsideDir):
		return m, linked(record.FileManifest)
	case err != nil:
		return m, outcome.Usage("run_dir_invalid", "%s is not a run directory (no readable run.json): %v", dir, err)
	}
	return m, nil
}

// TruncateJournal cuts the journal of dir to size, dropping the torn line
// a crash left after the last complete one, through a descriptor opened
// as every file of the directory is.
func TruncateJournal(dir string, size int64) error {
	f, err := openFile(dir, record.FileJournal, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	err = f.Truncate(size)
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
