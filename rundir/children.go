package rundir

import (
	"errors"
	"fmt"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
)

// A delegate_task child's run directory lies inside its parent's
// (children/<id>) but is a run of its own: the parent's chain covers what
// the parent recorded of it (child.ended: its run id and journal head),
// not its files. Verifying a parent verifies every child its journal
// names, with this same verifier, and holds each to that record: a child
// removed, or swapped for another run's directory that verifies on its
// own, is a parent that does not verify, and resume refuses it rather
// than start a new child under an id the journal already knows.

// maxChildDepth bounds how deep verification follows children inside
// children: a directory is input, and its nesting is the writer's.
const maxChildDepth = 32

// takeChild records a child.ended line.
func (st *State) takeChild(d record.ChildEnded) error {
	if CheckRunID(d.ID) != nil || d.Dir != path.Join(record.DirChildren, d.ID) {
		return fmt.Errorf("child %q recorded at %q, not at %s/<its run id>", d.ID, d.Dir, record.DirChildren)
	}
	if st.Children == nil {
		st.Children = map[string]record.ChildEnded{}
	}
	st.Children[d.Dir] = d
	return nil
}

// checkChildren verifies each child the journal names, opened once beneath
// the run directory dir through no link and read through that descriptor,
// and holds it to the parent's last record of it.
func (st *State) checkChildren(dir string, key []byte, depth int) error {
	if len(st.Children) > 0 && depth >= maxChildDepth {
		return tampered("child runs nest more than %d deep", maxChildDepth)
	}
	for _, rel := range slices.Sorted(maps.Keys(st.Children)) {
		c := st.Children[rel]
		d, err := artifacts.OpenDirBeneath(dir, filepath.FromSlash(rel))
		switch {
		case errors.Is(err, artifacts.ErrOutsideDir):
			return tampered("child run %s is a symbolic link or leads outside the run directory (harness writes only directories there)", rel)
		case err != nil:
			return tampered("child run %s (run %s), which the journal records, cannot be opened: %v", rel, c.ID, err)
		}
		err = checkChild(d.Name(), artifacts.DirPath(d), c, key, depth+1)
		d.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// checkChild verifies the child c opened at fd (shown as shown) and holds
// it to c: the same run id, and c's journal head a line of its journal (a
// segment the parent resumed goes on after it; another run's journal
// never holds it).
func checkChild(shown, fd string, c record.ChildEnded, key []byte, depth int) error {
	name := strings.ReplaceAll
	m, err := ReadManifest(fd)
	if err != nil {
		return tampered("child run %s (run %s), which the journal records, cannot be read: %s", c.Dir, c.ID, name(outcome.As(err).Msg, fd, shown))
	}
	st, err := open(fd, m, key, depth)
	if err == nil {
		err = st.checkFiles(fd)
	}
	if err != nil {
		e := outcome.As(err)
		return tampered("child run %s does not verify: %s: %s", c.Dir, e.Code, name(e.Msg, fd, shown))
	}
	if m.RunID != c.ID || !st.HasLine(c.JournalHead) {
		return tampered("child run %s is not the run the journal recorded (run %s, journal head %s): it holds run %s, whose journal has no such line", c.Dir, c.ID, c.JournalHead, m.RunID)
	}
	return nil
}

// HasLine reports whether d is the digest of a line of the verified
// journal: a record of the run made when a segment of it ended names a
// line its journal still holds however later segments go on, and another
// run's journal never holds it.
func (st *State) HasLine(d artifacts.Digest) bool { return st.lines[d] }

// lineDigests are the digests of every line of a verified journal: each
// line's prev is the one before it, and head the last.
func lineDigests(events []artifacts.Event, head artifacts.Digest) map[artifacts.Digest]bool {
	out := make(map[artifacts.Digest]bool, len(events))
	for _, ev := range events {
		if ev.Prev != "" {
			out[ev.Prev] = true
		}
	}
	out[head] = true
	return out
}
