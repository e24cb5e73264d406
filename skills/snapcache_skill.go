package skills

import (
	"reflect"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/harness-dev/harness/artifacts"
)

// Skill entries of the snapshot cache: what loading a skill produced
// (its SKILL.md parsed, its directories listed, its links checked), kept
// by the stat fingerprints of SKILL.md and of every directory listed. A
// directory's modification and change times move whenever an entry is
// added, removed or renamed in it, SKILL.md's whenever it is written, and
// a script's when its mode changes (listing records whether it is
// executable), so equal fingerprints mean loading would produce the same
// skill; the
// resources' digests are then reused or not file by file, as without
// this. The racily-clean rule applies to every fingerprint. A skill that
// involves a symbolic link anywhere (found through one, a linked SKILL.md
// or a link among its files) is never cached: a link's target can change
// without any of these fingerprints moving.

type skillEntry struct {
	Dir   string // the candidate directory, as found
	Stats []pathStat
	Skill cachedSkill
	Diags []Diagnostic // loading's own diagnostics, returned beside the skill
}

// pathStat is one fingerprint, of a path relative to the skill's root.
type pathStat struct{ Rel, Stat string }

// cachedSkill is a loaded Skill in a form gob keeps exactly: gob drops
// empty slices and pointers to zero values, and cannot carry the
// frontmatter's untyped values, so those are spelled out.
type cachedSkill struct {
	Name, Description, Root, SkillPath, SkillDir, SandboxSkillPath, SandboxSkillDir string
	Digest                                                                          artifacts.Digest
	Frontmatter                                                                     fmValue
	Headings                                                                        []string
	BodyOffset, BodyLine                                                            int
	Resources                                                                       []cachedResource
	Diagnostics                                                                     []Diagnostic
}

type cachedResource struct {
	Path, Kind, HostPath, SandboxPath string
	Referenced                        bool
	Executable                        int8 // 0 unset, 1 false, 2 true
	Diagnostics                       []Diagnostic
}

// fmValue is one frontmatter value with its Go type (what jsonValue
// produces: maps, lists, strings, booleans, nil, integers and floats).
type fmValue struct {
	Kind reflect.Kind
	Nil  bool
	S    string
	B    bool
	I    int64
	U    uint64
	F    float64
	List []fmValue
	Keys []string
	Vals []fmValue
}

func toFM(v any) (fmValue, bool) {
	if v == nil {
		return fmValue{Nil: true}, true
	}
	rv := reflect.ValueOf(v)
	out := fmValue{Kind: rv.Kind()}
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			e, ok := toFM(x[k])
			if !ok {
				return out, false
			}
			out.Keys, out.Vals = append(out.Keys, k), append(out.Vals, e)
		}
		out.Nil = x == nil
	case []any:
		for _, e := range x {
			ev, ok := toFM(e)
			if !ok {
				return out, false
			}
			out.List = append(out.List, ev)
		}
		out.Nil = x == nil
	case string:
		out.S = x
	case bool:
		out.B = x
	case float64:
		out.F = x
	case int, int8, int16, int32, int64:
		out.I = rv.Int()
	case uint, uint8, uint16, uint32, uint64:
		out.U = rv.Uint()
	default:
		return out, false
	}
	return out, true
}

func (f fmValue) value() any {
	if f.Nil && f.Kind != reflect.Map && f.Kind != reflect.Slice {
		return nil
	}
	switch f.Kind {
	case reflect.Map:
		if f.Nil {
			return map[string]any(nil)
		}
		m := make(map[string]any, len(f.Keys))
		for i, k := range f.Keys {
			m[k] = f.Vals[i].value()
		}
		return m
	case reflect.Slice:
		if f.Nil {
			return []any(nil)
		}
		l := make([]any, len(f.List))
		for i, e := range f.List {
			l[i] = e.value()
		}
		return l
	case reflect.String:
		return f.S
	case reflect.Bool:
		return f.B
	case reflect.Float64:
		return f.F
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return reflect.ValueOf(f.I).Convert(intTypes[f.Kind]).Interface()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return reflect.ValueOf(f.U).Convert(intTypes[f.Kind]).Interface()
	}
	return nil
}

// intTypes gives an integer back the Go type it had when cached.
var intTypes = map[reflect.Kind]reflect.Type{
	reflect.Int: reflect.TypeFor[int](), reflect.Int8: reflect.TypeFor[int8](), reflect.Int16: reflect.TypeFor[int16](),
	reflect.Int32: reflect.TypeFor[int32](), reflect.Int64: reflect.TypeFor[int64](),
	reflect.Uint: reflect.TypeFor[uint](), reflect.Uint8: reflect.TypeFor[uint8](), reflect.Uint16: reflect.TypeFor[uint16](),
	reflect.Uint32: reflect.TypeFor[uint32](), reflect.Uint64: reflect.TypeFor[uint64](),
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
	fm, ok := toFM(map[string]any(s.Frontmatter))
	if !ok {
		return skillEntry{}, false
	}
	e := skillEntry{Dir: c.dir, Diags: slices.Clone(diags)}
	paths := append([]string{s.SkillPath}, w.dirs...)
	for _, r := range s.Resources {
		// Whether a script is executable is read when listing; a chmod
		// moves only the file's own change time.
		if r.Executable != nil {
			paths = append(paths, r.HostPath)
		}
	}
	for _, p := range paths {
		rel := relTo(c.root.path, p)
		st, ok := lstatBeneath(c.root, rel)
		if !ok {
			return skillEntry{}, false
		}
		e.Stats = append(e.Stats, pathStat{Rel: rel, Stat: st})
	}
	e.Skill = cachedSkill{
		Name: s.Name, Description: s.Description, Root: s.Root, SkillPath: s.SkillPath, SkillDir: s.SkillDir,
		SandboxSkillPath: s.SandboxSkillPath, SandboxSkillDir: s.SandboxSkillDir, Digest: s.Digest, Frontmatter: fm,
		Headings: s.Headings, BodyOffset: s.BodyOffset, BodyLine: s.bodyLine, Diagnostics: slices.Clone(s.Diagnostics),
	}
	for _, r := range s.Resources {
		cr := cachedResource{Path: r.Path, Kind: r.Kind, HostPath: r.HostPath, SandboxPath: r.SandboxPath, Referenced: r.Referenced, Diagnostics: slices.Clone(r.Diagnostics)}
		if r.Executable != nil {
			cr.Executable = 1
			if *r.Executable {
				cr.Executable = 2
			}
		}
		e.Skill.Resources = append(e.Skill.Resources, cr)
	}
	return e, true
}

// lstatBeneath fingerprints rel under root without following a final
// link; ok is false for a link or anything it cannot stat.
func lstatBeneath(root *scanRoot, rel string) (string, bool) {
	var st unix.Stat_t
	if err := unix.Fstatat(root.dirfd, rel, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return "", false
	}
	return statKey(&st), true
}

// fromCache rebuilds the loaded skill of candidate c from its entry when
// every fingerprint is unchanged.
func (sc *scanner) fromCache(c candidate, e *skillEntry) (*Skill, []Diagnostic, bool) {
	if c.link != nil || c.viaLink || e.Dir != c.dir {
		return nil, nil, false
	}
	for _, ps := range e.Stats {
		if st, ok := lstatBeneath(c.root, ps.Rel); !ok || st != ps.Stat {
			return nil, nil, false
		}
	}
	cs := &e.Skill
	fm, _ := cs.Frontmatter.value().(map[string]any)
	s := &Skill{
		Name: cs.Name, Description: cs.Description, Root: cs.Root, SkillPath: cs.SkillPath, SkillDir: cs.SkillDir,
		SandboxSkillPath: cs.SandboxSkillPath, SandboxSkillDir: cs.SandboxSkillDir, Digest: cs.Digest, Frontmatter: fm,
		Headings: cs.Headings, BodyOffset: cs.BodyOffset, Diagnostics: slices.Clone(cs.Diagnostics),
		rootIndex: c.index, relDir: c.rel, bodyLine: cs.BodyLine, fsRoot: c.root,
		Resources: make([]Resource, len(cs.Resources)),
	}
	for i, cr := range cs.Resources {
		r := Resource{Path: cr.Path, Kind: cr.Kind, HostPath: cr.HostPath, SandboxPath: cr.SandboxPath, Referenced: cr.Referenced, Diagnostics: slices.Clone(cr.Diagnostics)}
		if r.Diagnostics == nil {
			r.Diagnostics = []Diagnostic{}
		}
		if cr.Executable > 0 {
			x := cr.Executable == 2
			r.Executable = &x
		}
		s.Resources[i] = r
	}
	return s, slices.Clone(e.Diags), true
}
