package run

import (
	"slices"

	"github.com/harness-dev/harness/record"
)

// resolved is the outcome of checking the options against the filesystem:
// absolute, symlink-free paths that every later stage uses.
type resolved struct {
	workspace   string   // absolute host path
	cwd         string   // slash path relative to workspace, "." for the root
	skillsRoots []string // absolute host paths inside workspace
	// externalRoots are outside the workspace, after skillsRoots.
	externalRoots []string
	runDir        string // absolute host path of this run's directory
	runID         string
	// attachments are the --attach files as read at the start (a resume
	// takes them from the journal, never from the disk again).
	attachments []record.Attachment
}

// allRoots is every skill root in precedence order, as the scan takes them.
func (res resolved) allRoots() []string {
	return append(slices.Clip(res.skillsRoots), res.externalRoots...)
}
