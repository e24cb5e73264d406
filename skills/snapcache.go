package skills

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/harness-dev/harness/artifacts"
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

// cacheFormat changes whenever the layout does; an older file is
// ignored.
const cacheFormat = 5

// cacheMagic opens every cache file (then the format, the stamp, the
// counts of file and skill entries, and the records).
const cacheMagic = "harness snapshot cache\n"

// SnapshotCache is a cache directory for one set of roots.
type SnapshotCache struct {
	path  string
	stamp int64
}

// OpenSnapshotCache names the cache file for these scan options in dir
// (created 0700: digests in it are only ever trusted after a stat, but
// nobody else needs to read them) and takes the stamp for this scan.
func OpenSnapshotCache(dir string, opts ScanOptions) (*SnapshotCache, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("snapshot cache %s: %w", dir, err)
	}
	if err := PrivateDir(dir); err != nil {
		return nil, err
	}
	h := artifacts.NewHasher()
	h.WriteField("harness.snapshot-cache/1")
	for _, r := range opts.Roots {
		h.WriteField(r)
	}
	h.WriteField(opts.Workspace)
	h.WriteField(opts.SandboxWorkspace)
	h.WriteField(fmt.Sprint(opts.Limits.withDefaults()))
	key := strings.TrimPrefix(string(h.Digest()), "blake3:")[:32]
	stamp, err := fsStamp(dir)
	if err != nil {
		return nil, err
	}
	return &SnapshotCache{path: filepath.Join(dir, key+".cache"), stamp: stamp}, nil
}

// PrivateDir refuses a cache directory that another user could write
// (or that is not this user's): whoever can write the cache can make a
// later scan keep a stale digest or a content scan keep stale findings.
func PrivateDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("snapshot cache: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("snapshot cache %s is not a directory", dir)
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("snapshot cache %s is writable by other users (mode %v): make it private (chmod go-w) or choose another --snapshot-cache", dir, fi.Mode().Perm())
	case ok && int(st.Uid) != os.Geteuid():
		return fmt.Errorf("snapshot cache %s belongs to another user (uid %d): choose another --snapshot-cache", dir, st.Uid)
	}
	return nil
}

// fsStamp is the file system's own idea of now: the mtime of a file
// created for the purpose.
func fsStamp(dir string) (int64, error) {
	f, err := os.CreateTemp(dir, ".stamp-")
	if err != nil {
		return 0, fmt.Errorf("snapshot cache: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.ModTime().UnixNano(), nil
}

// cacheIndex is a cache file as a scan uses it: its records by
// directory, each decoded only when a loading worker asks for it.
type cacheIndex struct {
	stamp   int64
	records map[string]cacheRecord
	// files and skills count the entries, so that a scan can tell
	// whether rewriting the file would change it.
	files, skills int
}

// cacheRecord is one directory's entries, still encoded: the skill loaded
// from it (nil when none) and the digests of the files below it.
type cacheRecord struct{ skill, files []byte }

// load reads the cache file; a missing, old-format or corrupt one is
// empty (it only ever saves work).
func (c *SnapshotCache) load() *cacheIndex {
	b, err := os.ReadFile(c.path)
	if err != nil {
		return &cacheIndex{}
	}
	x, ok := decodeIndex(b)
	if !ok {
		return &cacheIndex{}
	}
	return x
}

func decodeIndex(b []byte) (*cacheIndex, bool) {
	rest, ok := bytes.CutPrefix(b, []byte(cacheMagic))
	if !ok {
		return nil, false
	}
	d := decoder{b: rest}
	if d.uvarint() != cacheFormat {
		return nil, false
	}
	x := &cacheIndex{stamp: d.varint()}
	x.files, _ = d.length()
	x.skills, _ = d.length()
	n, _ := d.length()
	x.records = make(map[string]cacheRecord, n)
	for range n {
		dir := d.str()
		rec := cacheRecord{skill: d.raw(), files: d.raw()}
		if len(rec.skill) == 0 {
			rec.skill = nil
		}
		if _, dup := x.records[dir]; dup {
			return nil, false
		}
		x.records[dir] = rec
	}
	if !d.ok() || len(d.b) != 0 {
		return nil, false
	}
	return x, true
}

// skill is the encoded skill entry for dir, or nil.
func (x *cacheIndex) skill(dir string) []byte {
	if x == nil {
		return nil
	}
	return x.records[dir].skill
}

// has reports whether dir has a record: a skill entry or file entries.
func (x *cacheIndex) has(dir string) bool {
	if x == nil {
		return false
	}
	r, ok := x.records[dir]
	return ok && (r.skill != nil || r.files != nil)
}

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
func (x *cacheIndex) filesOf(dir string, arena *stringArena, out []fileEntry) ([]fileEntry, artifacts.Digest) {
	if x == nil {
		return nil, ""
	}
	raw := x.records[dir].files
	if len(raw) == 0 {
		return nil, ""
	}
	d := decoder{b: raw, arena: arena}
	n, _ := d.length()
	out = slices.Grow(out[:0], n)
	for range n {
		prefix := d.uvarint()
		e := fileEntry{suffix: d.raw(), st: d.stat(), size: d.varint(), digest: d.digest(), contentKind: d.word(), shebang: d.str(), runtime: d.word()}
		if prefix > uint64(len(dir)) {
			return nil, ""
		}
		e.prefix = int(prefix)
		if e.st.olderThan(x.stamp) {
			if arena != nil {
				e.stat = arena.appended(statNumsMax, e.st.appendTo)
			}
			out = append(out, e)
		}
	}
	tree := d.digest()
	if !d.ok() || len(d.b) != 0 {
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

// save writes what the scan digested, leaving out racily clean entries,
// atomically (a torn cache would only be ignored, but is never written).
// Unlike an artifact it is not fsynced: a cache lost in a crash only
// costs the next scan time, and an fsync of megabytes would cost every
// scan that learned something.
func (c *SnapshotCache) save(reg *Registry, skills []skillEntry) error {
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
		if r := get(e.Dir); r.skill == nil && entryOlder(e.Raw, c.stamp) {
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
			if r := &s.Resources[j]; c.keeps(r) {
				rec.files = append(rec.files, r)
				nFiles++
				kept++
			}
		}
		if kept == len(s.Resources) && kept > 0 && sortedByHostPath(s.Resources) {
			rec.tree = s.TreeDigest
		}
	}
	dirs := slices.Sorted(maps.Keys(recs))
	e := encoder{b: []byte(cacheMagic)}
	e.uvarint(cacheFormat)
	e.varint(c.stamp)
	e.length(nFiles, false)
	e.length(nSkills, false)
	e.length(len(dirs), false)
	var files encoder
	for _, dir := range dirs {
		r := recs[dir]
		e.str(dir)
		e.raw(r.skill)
		slices.SortFunc(r.files, func(a, b *Resource) int { return strings.Compare(a.HostPath, b.HostPath) })
		files.b = files.b[:0]
		files.length(len(r.files), false)
		for _, f := range r.files {
			st, _ := parseStat(f.Stat)
			files.rel(dir, f.HostPath)
			files.stat(st)
			files.varint(f.Size)
			files.digest(f.Digest)
			files.str(f.ContentKind)
			files.str(f.Shebang)
			files.str(f.Runtime)
		}
		tree := r.tree
		if r.owners != 1 {
			tree = ""
		}
		files.digest(tree)
		e.raw(files.b)
	}
	if err := artifacts.WriteCache(c.path, func(w io.Writer) error { _, err := w.Write(e.b); return err }); err != nil {
		return err
	}
	prune(filepath.Dir(c.path), c.path)
	return nil
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

// keeps reports whether save keeps r's digest: a clean digest of a file
// whose fingerprint is strictly older than the stamp.
func (c *SnapshotCache) keeps(r *Resource) bool {
	return r.Stat != "" && len(r.Diagnostics) == 0 && olderThan(r.Stat, c.stamp)
}

// kept counts the resources of s that save would keep.
func (c *SnapshotCache) kept(s *Skill) int {
	n := 0
	for j := range s.Resources {
		if c.keeps(&s.Resources[j]) {
			n++
		}
	}
	return n
}

// maxCacheFiles bounds a cache directory: one file per set of roots, and
// CI jobs scan a new temporary workspace every time.
const maxCacheFiles = 64

// prune removes the least recently written cache files over the bound.
func prune(dir, keep string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	type file struct {
		path string
		mod  int64
	}
	var files []file
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".cache") {
			continue
		}
		if fi, err := e.Info(); err == nil {
			files = append(files, file{filepath.Join(dir, e.Name()), fi.ModTime().UnixNano()})
		}
	}
	if len(files) <= maxCacheFiles {
		return
	}
	slices.SortFunc(files, func(a, b file) int { return cmp.Compare(a.mod, b.mod) })
	for _, f := range files[:len(files)-maxCacheFiles] {
		if f.path != keep {
			os.Remove(f.path)
		}
	}
}

// olderThan reports whether a fingerprint's modification and change
// times are both strictly before stamp.
func olderThan(stat string, stamp int64) bool {
	st, ok := parseStat(stat)
	return ok && st.olderThan(stamp)
}

// Remove deletes the cache file (tests, --no-snapshot-cache clean-ups).
func (c *SnapshotCache) Remove() error {
	err := os.Remove(c.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
