package skills

import (
	"path/filepath"

	"github.com/harness-dev/harness/skills/snapcache"

	"golang.org/x/sys/unix"
)

// Skill entries of the snapshot cache: what loading a skill produced
// (its SKILL.md parsed, its directories listed, its links checked), kept
// by the stat fingerprints of SKILL.md and of every directory listed. A
// directory's modification and change times move whenever an entry is
// added, removed or renamed in it, SKILL.md's whenever it is written, and
// a script's when its mode changes (listing records whether it is
// executable), so equal fingerprints mean loading would produce the same
// skill; the resources' digests are then reused or not file by file, as
// without this. The racily-clean rule applies to every fingerprint. A
// skill that involves a symbolic link anywhere (found through one, a
// linked SKILL.md or a link among its files) is never cached: a link's
// target can change without any of these fingerprints moving.

// skillEntry is one loaded skill, encoded: its fingerprints first (so
// that a changed skill is rejected before anything else is decoded), then
// loading's own diagnostics and the skill.
type skillEntry struct {
	Dir string // the candidate directory, as found
	Raw []byte
}

// pathStat is one fingerprint, of a path relative to the skill's root.
type pathStat struct {
	Rel string
	St  statNums
}

func encodeSkillEntry(dir string, stats []pathStat, diags []Diagnostic, s *Skill) ([]byte, bool) {
	var e snapcache.Encoder
	e.Length(len(stats), false)
	for _, ps := range stats {
		e.Str(ps.Rel)
		encodeStat(&e, ps.St)
	}
	encodeDiagnostics(&e, diags)
	e.Str(s.Name)
	e.Str(s.Description)
	e.Rel(dir, s.Root)
	e.Rel(dir, s.SkillDir)
	e.Joined(s.SkillDir, "SKILL.md", s.SkillPath)
	e.Str(s.SandboxSkillDir)
	e.Joined(s.SandboxSkillDir, "SKILL.md", s.SandboxSkillPath)
	e.Digest(s.Digest)
	if !e.Value(map[string]any(s.Frontmatter), 0) {
		return nil, false
	}
	e.Length(len(s.Headings), s.Headings == nil)
	for _, h := range s.Headings {
		e.Str(h)
	}
	e.Varint(int64(s.BodyOffset))
	e.Varint(int64(s.bodyLine))
	encodeDiagnostics(&e, s.Diagnostics)
	e.Length(len(s.Resources), s.Resources == nil)
	for i := range s.Resources {
		r := &s.Resources[i]
		e.Str(r.Path)
		e.Str(r.Kind)
		e.Joined(s.SkillDir, r.Path, r.HostPath)
		e.Joined(s.SandboxSkillDir, r.Path, r.SandboxPath)
		e.Bool(r.Referenced)
		switch {
		case r.Executable == nil:
			e.Byte(0)
		case *r.Executable:
			e.Byte(2)
		default:
			e.Byte(1)
		}
		encodeDiagnostics(&e, r.Diagnostics)
	}
	return e.B, true
}

func decodePathStats(d *snapcache.Decoder) []pathStat {
	n, _ := d.Length()
	out := make([]pathStat, 0, n)
	for range n {
		out = append(out, pathStat{Rel: d.Str(), St: decodeStat(d)})
	}
	return out
}

// decodeSkill decodes the rest of an entry (after its path stats) into *into, with
// the exported fields loading sets, and returns it with loading's
// diagnostics.
func decodeSkill(d *snapcache.Decoder, dir string, into *Skill) (*Skill, []Diagnostic) {
	diags := decodeDiagnostics(d)
	s := into
	*s = Skill{Name: d.Str(), Description: d.Str(), Root: d.Rel(dir)}
	s.SkillDir = d.Rel(dir)
	s.SkillPath = d.Joined(s.SkillDir, "SKILL.md")
	s.SandboxSkillDir = d.Str()
	s.SandboxSkillPath = d.Joined(s.SandboxSkillDir, "SKILL.md")
	s.Digest = d.Digest()
	fm, ok := d.Value(0).(map[string]any)
	if !ok {
		d.Fail()
	}
	s.Frontmatter = fm
	if n, isNil := d.Length(); !isNil {
		s.Headings = make([]string, 0, n)
		for range n {
			s.Headings = append(s.Headings, d.Str())
		}
	}
	s.BodyOffset, s.bodyLine = d.Int(), d.Int()
	s.Diagnostics = decodeDiagnostics(d)
	if n, isNil := d.Length(); !isNil {
		s.Resources = make([]Resource, 0, n)
		for range n {
			r := Resource{Path: d.Str(), Kind: d.Word(words)}
			r.HostPath = d.Joined(s.SkillDir, r.Path)
			r.SandboxPath = d.Joined(s.SandboxSkillDir, r.Path)
			r.Referenced = d.Bool()
			switch d.Byte() {
			case 0:
			case 1:
				r.Executable = new(bool)
			case 2:
				r.Executable = new(bool)
				*r.Executable = true
			default:
				d.Fail()
			}
			r.Diagnostics = decodeDiagnostics(d)
			s.Resources = append(s.Resources, r)
		}
	}
	if !d.Done() {
		return nil, nil
	}
	return s, diags
}

// entryOlder reports whether every fingerprint of an encoded entry is
// strictly older than stamp.
func entryOlder(raw []byte, stamp int64) bool {
	d := snapcache.NewDecoder(raw, nil)
	stats := decodePathStats(&d)
	if !d.OK() || len(stats) == 0 {
		return false
	}
	for _, ps := range stats {
		if !ps.St.olderThan(stamp) {
			return false
		}
	}
	return true
}

// walkInfo is what listing a skill saw, for deciding whether it can be
// cached: the directories listed (host paths), and whether it met a link
// or a failure.
type walkInfo struct {
	dirs        []string
	uncacheable bool
}

// skillEntryOf builds the cache entry for a skill just loaded, or reports
// that it cannot be cached.
func (sc *scanner) skillEntryOf(c candidate, s *Skill, diags []Diagnostic, w walkInfo) (skillEntry, bool) {
	if c.link != nil || c.viaLink || w.uncacheable {
		return skillEntry{}, false
	}
	paths := append([]string{s.SkillPath}, w.dirs...)
	for _, r := range s.Resources {
		// Whether a script is executable is read when listing; a chmod
		// moves only the file's own change time.
		if r.Executable != nil {
			paths = append(paths, r.HostPath)
		}
	}
	stats := make([]pathStat, 0, len(paths))
	for _, p := range paths {
		rel := relTo(c.root.path, p)
		st, ok := lstatBeneath(c.root, rel)
		if !ok {
			return skillEntry{}, false
		}
		stats = append(stats, pathStat{Rel: rel, St: st})
	}
	raw, ok := encodeSkillEntry(c.dir, stats, diags, s)
	if !ok {
		return skillEntry{}, false
	}
	return skillEntry{Dir: c.dir, Raw: raw}, true
}

// lstatBeneath fingerprints rel under root without following a final
// link; ok is false for a link or anything it cannot stat.
func lstatBeneath(root *scanRoot, rel string) (statNums, bool) {
	var st unix.Stat_t
	if err := unix.Fstatat(root.dirfd, rel, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return statNums{}, false
	}
	return statNumsOf(&st), true
}

// fromCache rebuilds the loaded skill of candidate c from its entry when
// every fingerprint is unchanged, and returns the fingerprints it just
// checked.
func (sc *scanner) fromCache(c candidate, raw []byte, arena *snapcache.Arena, into *Skill) (*Skill, []Diagnostic, []pathStat, bool) {
	if c.link != nil || c.viaLink {
		return nil, nil, nil, false
	}
	d := snapcache.NewDecoder(raw, nil)
	stats := decodePathStats(&d)
	if !d.OK() || len(stats) == 0 {
		return nil, nil, nil, false
	}
	// SKILL.md comes first; discovery has just taken its fingerprint.
	for i, ps := range stats {
		if i == 0 && c.skillFile != (statNums{}) && ps.Rel == relTo(c.root.path, filepath.Join(c.dir, "SKILL.md")) {
			if c.skillFile != ps.St {
				return nil, nil, nil, false
			}
			continue
		}
		if st, ok := lstatBeneath(c.root, ps.Rel); !ok || st != ps.St {
			return nil, nil, nil, false
		}
	}
	d.SetArena(arena)
	s, diags := decodeSkill(&d, c.dir, into)
	if s == nil {
		return nil, nil, nil, false
	}
	s.rootIndex, s.relDir, s.fsRoot = c.index, c.rel, c.root
	return s, diags, stats, true
}

// markChecked marks the file entries of scripts whose fingerprint
// fromCache has just checked (a script's is part of its skill's entry):
// the digest pass need not stat them again. Equal fingerprints are the
// same inode, so still the regular file that was digested.
func markChecked(root string, res []Resource, files []*fileEntry, checked []pathStat) {
	for i, f := range files {
		if f == nil || res[i].Executable == nil {
			continue
		}
		rel := relTo(root, res[i].HostPath)
		for _, ps := range checked {
			if ps.Rel == rel && ps.St == f.st {
				f.checked = true
				break
			}
		}
	}
}
