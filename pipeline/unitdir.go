package pipeline

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/rundir"
)

// A unit's run directory is recorded relative to the pipeline or batch
// directory (version 2), so that the directory verifies and resumes
// wherever it was copied or moved as a whole; every reader finds it there,
// beneath the directory it was given, never at a path the journal spells
// out. Version 1 recorded absolute paths: such a directory is read only
// where it was written.

// recordedRunDir is how a directory of the given version records the run
// directory of unit name.
func recordedRunDir(version int, dir string, l layout, name string) string {
	rel := filepath.Join(l.runs, name)
	if version < 2 {
		return filepath.Join(dir, rel)
	}
	return rel
}

// unitRunDir is where the run directory the journal records for unit name
// is, relative to the pipeline or batch directory dir: the one place
// harness puts it (<runs>/<name>). A recorded path that names anything
// else (another unit's directory, "..", an absolute path, a version 1 path
// outside dir as it is now) is not what harness wrote.
func unitRunDir(version int, dir string, l layout, name, recorded string) (string, error) {
	want := filepath.Join(l.runs, name)
	rel := recorded
	if version < 2 {
		r, err := filepath.Rel(dir, recorded)
		if err != nil || !filepath.IsAbs(recorded) {
			return "", fmt.Errorf("is not the absolute path a version 1 %s directory records", l.kind)
		}
		rel = r
	}
	// A unit's name is its run's id: one path element (the manifest is
	// input too).
	if rundir.CheckRunID(name) != nil || !filepath.IsLocal(rel) || filepath.Clean(rel) != want {
		return "", fmt.Errorf("is not %s inside the %s directory, where harness puts it", want, l.kind)
	}
	return want, nil
}

// unitRun is a unit's run directory opened once, beneath the pipeline or
// batch directory and through no link: it is verified and read through
// this descriptor, so a directory swapped in after the open is never the
// one read.
type unitRun struct {
	d    *os.File
	path string // where it is, for messages and readers
}

// openUnitRun opens the run directory rel of the pipeline or batch
// directory dir. A link, or a path leading outside, is refused as such; a
// missing directory is os.ErrNotExist.
func openUnitRun(dir, rel string) (*unitRun, error) {
	d, err := artifacts.OpenDirBeneath(dir, rel)
	if errors.Is(err, artifacts.ErrOutsideDir) {
		return nil, &linkError{}
	}
	if err != nil {
		return nil, err
	}
	return &unitRun{d: d, path: filepath.Join(dir, rel)}, nil
}

func (u *unitRun) Close() error { return u.d.Close() }

// linkError is a unit's run directory that is a link, or whose path leads
// outside the pipeline or batch directory.
type linkError struct{}

func (*linkError) Error() string {
	return "is a symbolic link or leads outside the directory (harness writes only directories there)"
}

// verify is rundir.Verify of the opened directory, its report naming the
// directory's path rather than the descriptor's.
func (u *unitRun) verify(key []byte) (*rundir.Report, error) {
	fd := artifacts.DirPath(u.d)
	rep, err := rundir.Verify(fd, key)
	if err != nil {
		return nil, errors.New(strings.ReplaceAll(err.Error(), fd, u.path))
	}
	rep.RunDir = u.path
	if rep.Problem != nil {
		rep.Problem.Message = strings.ReplaceAll(rep.Problem.Message, fd, u.path)
	}
	return rep, nil
}

// read reads the file name of the opened run directory.
func (u *unitRun) read(name string) ([]byte, error) {
	return artifacts.ReadBeneath(artifacts.DirPath(u.d), name)
}

// checkIdentity holds a verified run to the identity the journal recorded
// for the unit when it ended: a run directory swapped for another run's,
// which verifies on its own, is not this one.
// A version 2 journal records it for every unit that had a run.
func checkIdentity(version int, o *record.PhaseOutcome, rep *rundir.Report) error {
	if version >= 2 && (o.RunID == "" || o.JournalHead == "") {
		return fmt.Errorf("is not named by the journal: it records no run id and journal head for the unit")
	}
	if o.RunID != "" && rep.RunID != o.RunID {
		return fmt.Errorf("is run %s, not run %s, which the journal recorded", rep.RunID, o.RunID)
	}
	// The recorded head stays a line of the run's journal however a
	// later segment (a resume through the pipeline) goes on after it.
	if o.JournalHead != "" && !rep.HasLine(o.JournalHead) {
		return fmt.Errorf("is not the run the journal recorded: its journal has no line %s", o.JournalHead)
	}
	return nil
}
