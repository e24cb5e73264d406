package skills

import (
	"fmt"
	"path"
	"strings"
)

// ExecTemp is the exec entry that lets a call execute what lies in its
// own private temporary directory (bwrap's /tmp, the Landlock backend's
// per-call directory), never the host's /tmp. A toolchain that builds and
// then runs a program there (go test's test binary) needs it.
const ExecTemp = "$TMPDIR/"

// ExecEntry is one entry of a manifest's exec list, as written.
type ExecEntry struct {
	// Name is a program looked up on PATH ("go").
	Name string
	// Path is an absolute host path: a program ("/usr/bin/git"), or with
	// Dir a directory whose every file may run ("/usr/local/go/pkg/tool/").
	Path string
	Dir  bool
	// Temp is ExecTemp.
	Temp bool
}

// ExecEntryOf reads one exec entry: a program name, an absolute path of a
// program, an absolute directory ending in "/", or ExecTemp. Nothing is
// expanded: a wildcard, a "..", a variable other than ExecTemp, or "/"
// itself (every program on the machine) is refused, so that what the
// operator reviews is what runs.
func ExecEntryOf(s string) (ExecEntry, error) {
	switch {
	case s == ExecTemp:
		return ExecEntry{Temp: true}, nil
	case execName.MatchString(s):
		return ExecEntry{Name: s}, nil
	case !strings.HasPrefix(s, "/"):
		return ExecEntry{}, fmt.Errorf("%q is not a program name, an absolute path (a directory ends in \"/\") or %s", s, ExecTemp)
	case strings.ContainsAny(s, globChars+"$\\\x00\n"):
		return ExecEntry{}, fmt.Errorf("%q holds a wildcard or special character; exec paths are literal", s)
	}
	dir := strings.HasSuffix(s, "/")
	p := strings.TrimSuffix(s, "/")
	switch {
	case p == "" || path.Clean(p) == "/":
		return ExecEntry{}, fmt.Errorf("%q would let every program on the machine run; name the directories the skill needs", s)
	case path.Clean(p) != p:
		return ExecEntry{}, fmt.Errorf("%q is not a clean absolute path (no \"..\", \".\" or doubled \"/\")", s)
	}
	return ExecEntry{Path: p, Dir: dir}, nil
}

// String writes e as the manifest spells it.
func (e ExecEntry) String() string {
	switch {
	case e.Temp:
		return ExecTemp
	case e.Name != "":
		return e.Name
	case e.Dir:
		return e.Path + "/"
	}
	return e.Path
}
