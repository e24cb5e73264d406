package skills

import (
	"fmt"
	"slices"
	"strings"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/skills/snapcache"
)

// The snapshot cache lets a later scan of the same roots reuse a file's
// digest without reading the file, as git's index does: each entry holds
// the file's stat fingerprint (device, inode, size, modification and
// change time in nanoseconds) when it was digested. A scan re-stats every
// file beneath its root (fstatat) and reuses an entry only when the
// fingerprint is equal; a file it cannot stat is read, or reported, as
// without a cache.
//
// Racily clean files: file system timestamps are coarser than the clock
// (a jiffy on ext4), so a file changed twice within one tick, keeping its
// size, keeps its fingerprint. An entry is therefore kept only when the
// file's modification and change times are strictly older than the
// cache's stamp: a time read from the file system itself (a stamp file's
// mtime) before the scan began. Any later change of such a file gives it
// a newer time, so a different fingerprint.

// SnapshotCache is the cache file for one set of roots (see snapcache).
type SnapshotCache = snapcache.Cache

// OpenSnapshotCache names the cache file for these scan options in dir
// and takes the stamp for this scan.
func OpenSnapshotCache(dir string, opts ScanOptions) (*SnapshotCache, error) {
	h := artifacts.NewHasher()
	h.WriteField("harness.snapshot-cache/1")
	for _, r := range opts.Roots {
		h.WriteField(r)
	}
	h.WriteField(opts.Workspace)
	h.WriteField(opts.SandboxWorkspace)
	h.WriteField(fmt.Sprint(opts.Limits.withDefaults()))
	return snapcache.Open(dir, strings.TrimPrefix(string(h.Digest()), "blake3:")[:32])
}

// PrivateDir refuses a cache directory another user could write (see
// snapcache.PrivateDir).
func PrivateDir(dir string) error { return snapcache.PrivateDir(dir) }

// fileEntry is the cached digest of one file, matched against a host path
// without building the path.
type fileEntry struct {
	prefix      int    // bytes of the record's directory the path starts with
	suffix      []byte // the rest of the path
	st          statNums
	stat        string // st's written form, when the decoder made it
	size        int64
	digest      artifacts.Digest
	contentKind string
	shebang     string
	runtime     string
	// checked says the scan has already seen this fingerprint on the
	// file (a script's, checked with its skill).
	checked bool
}

func (e *fileEntry) is(dir, hostPath string) bool {
	return e.prefix <= len(hostPath) && hostPath[:e.prefix] == dir[:e.prefix] && hostPath[e.prefix:] == string(e.suffix)
}

// filesOf decodes the file entries recorded below dir that are strictly
// older than the cache's stamp (the racily-clean rule, kept on reading
// as on writing), and the tree digest recorded with them: it is "" unless
// the record holds one and every entry passed the rule.
//
// The entries are appended to out[:0], which the caller reuses.
func filesOf(x *snapcache.Index, dir string, arena *snapcache.Arena, out []fileEntry) ([]fileEntry, artifacts.Digest) {
	raw := x.FileEntries(dir)
	if len(raw) == 0 {
		return nil, ""
	}
	d := snapcache.NewDecoder(raw, arena)
	n, _ := d.Length()
	out = slices.Grow(out[:0], n)
	for range n {
		prefix := d.Uvarint()
		e := fileEntry{suffix: d.Raw(), st: decodeStat(&d), size: d.Varint(), digest: d.Digest(), contentKind: d.Word(words), shebang: d.Str(), runtime: d.Word(words)}
		if prefix > uint64(len(dir)) {
			return nil, ""
		}
		e.prefix = int(prefix)
		if e.st.olderThan(x.Stamp) {
			if arena != nil {
				e.stat = arena.Appended(statNumsMax, e.st.appendTo)
			}
			out = append(out, e)
		}
	}
	tree := d.Digest()
	if !d.Done() {
		return nil, ""
	}
	if len(out) != n {
		tree = ""
	}
	return out, tree
}

// cachedTree is the tree digest recorded with a skill's file entries,
// when it is still the skill's: every resource took its digest from the
// entry at its own position (so the paths, their order and the digests
// are those the recorded digest was computed over) and there are no
// other entries.
func cachedTree(tree artifacts.Digest, res []Resource, files []fileEntry, matched []*fileEntry, reusedAll bool) artifacts.Digest {
	if tree == "" || !reusedAll || len(res) != len(files) || len(matched) != len(res) {
		return ""
	}
	for i := range matched {
		if matched[i] != &files[i] {
			return ""
		}
	}
	return tree
}

// matchFiles pairs each resource with its file entry, if any. Entries are
// sorted by host path, as resources nearly always are, so a cursor finds
// most of them in one step.
//
// The pairs are written to out[:0], which the caller reuses.
func matchFiles(dir string, files []fileEntry, res []Resource, out []*fileEntry) []*fileEntry {
	if len(files) == 0 {
		return nil
	}
	out = slices.Grow(out[:0], len(res))[:len(res)]
	clear(out)
	k := 0
	for i := range res {
		p := res[i].HostPath
		if k < len(files) && files[k].is(dir, p) {
			out[i] = &files[k]
			k++
			continue
		}
		for m := range files {
			if files[m].is(dir, p) {
				out[i], k = &files[m], m+1
				break
			}
		}
	}
	return out
}

// saveCache writes what the scan digested, leaving out racily clean
// entries.
func saveCache(c *SnapshotCache, reg *Registry, skills []skillEntry) error {
	type record struct {
		skill []byte
		files []*Resource
		// tree is the digest of the one skill whose resources are
		// exactly files, in order; "" when that is not so.
		tree   artifacts.Digest
		owners int
	}
	recs := map[string]*record{}
	get := func(dir string) *record {
		r := recs[dir]
		if r == nil {
			r = &record{}
			recs[dir] = r
		}
		return r
	}
	nFiles, nSkills := 0, 0
	for _, e := range skills {
		if r := get(e.Dir); r.skill == nil && entryOlder(e.Raw, c.Stamp()) {
			r.skill = e.Raw
			nSkills++
		}
	}
	for i := range reg.Skills {
		s := &reg.Skills[i]
		rec := get(s.SkillDir)
		rec.owners++
		kept := 0
		for j := range s.Resources {
			if r := &s.Resources[j]; keeps(c, r) {
				rec.files = append(rec.files, r)
				nFiles++
				kept++
			}
		}
		if kept == len(s.Resources) && kept > 0 && sortedByHostPath(s.Resources) {
			rec.tree = s.TreeDigest
		}
	}
	out := make([]snapcache.Record, 0, len(recs))
	for dir, r := range recs {
		slices.SortFunc(r.files, func(a, b *Resource) int { return strings.Compare(a.HostPath, b.HostPath) })
		var files snapcache.Encoder
		files.Length(len(r.files), false)
		for _, f := range r.files {
			st, _ := parseStat(f.Stat)
			files.Rel(dir, f.HostPath)
			encodeStat(&files, st)
			files.Varint(f.Size)
			files.Digest(f.Digest)
			files.Str(f.ContentKind)
			files.Str(f.Shebang)
			files.Str(f.Runtime)
		}
		tree := r.tree
		if r.owners != 1 {
			tree = ""
		}
		files.Digest(tree)
		out = append(out, snapcache.Record{Dir: dir, Skill: r.skill, Files: files.B})
	}
	return c.Save(out, nFiles, nSkills)
}

// sortedByHostPath reports whether rs are in the order save writes file
// entries in (compared in place: a Resource is too large to copy per
// comparison, as slices.IsSortedFunc would).
func sortedByHostPath(rs []Resource) bool {
	for i := 1; i < len(rs); i++ {
		if rs[i-1].HostPath > rs[i].HostPath {
			return false
		}
	}
	return true
}

// keeps reports whether saveCache keeps r's digest: a clean digest of a
// file whose fingerprint is strictly older than the stamp.
func keeps(c *SnapshotCache, r *Resource) bool {
	return r.Stat != "" && len(r.Diagnostics) == 0 && olderThan(r.Stat, c.Stamp())
}

// keptCount counts the resources of s that saveCache would keep.
func keptCount(c *SnapshotCache, s *Skill) int {
	n := 0
	for j := range s.Resources {
		if keeps(c, &s.Resources[j]) {
			n++
		}
	}
	return n
}

// olderThan reports whether a fingerprint's modification and change
// times are both strictly before stamp.
func olderThan(stat string, stamp int64) bool {
	st, ok := parseStat(stat)
	return ok && st.olderThan(stamp)
}
