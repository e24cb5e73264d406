// Package snapcache is the file the snapshot cache keeps for one set of
// skill roots: records by directory, each an entry for the skill loaded
// from it and the digests of the files below it, encoded by the skills
// package and decoded only when a scan asks for that directory; the
// stamp that decides which of them may be trusted; and the directory
// that holds such files, private to its user and bounded.
package snapcache

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/harness-dev/harness/artifacts"
)

// format changes whenever the layout does; an older file is ignored.
const format = 5

// Magic opens every cache file (then the format, the stamp, the counts
// of file and skill entries, and the records).
const Magic = "harness snapshot cache\n"

// Cache is one cache file, and the stamp of the scan that uses it.
type Cache struct {
	path  string
	stamp int64
}

// Open names the cache file key in dir (created 0700: what it holds is
// only ever trusted after a stat, but nobody else needs to read it) and
// takes the stamp for this scan.
func Open(dir, key string) (*Cache, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("snapshot cache %s: %w", dir, err)
	}
	if err := PrivateDir(dir); err != nil {
		return nil, err
	}
	stamp, err := fsStamp(dir)
	if err != nil {
		return nil, err
	}
	return &Cache{path: filepath.Join(dir, key+".cache"), stamp: stamp}, nil
}

// OpenAt is the cache file at path with a stamp the caller took (tests pin
// it; Open takes it from the file system).
func OpenAt(path string, stamp int64) *Cache { return &Cache{path: path, stamp: stamp} }

// Path is the cache file's path.
func (c *Cache) Path() string { return c.path }

// Stamp is the file system's time before this scan began: an entry is
// written, and trusted, only for a file whose modification and change
// times are strictly older (a file changed twice within one tick keeps
// its fingerprint, so a newer one could be racily clean).
func (c *Cache) Stamp() int64 { return c.stamp }

// PrivateDir refuses a cache directory that another user could write
// (or that is not this user's): whoever can write the cache can make a
// later scan keep a stale digest or a content scan keep stale findings.
func PrivateDir(dir string) error {
	return artifacts.PrivateDir(dir, "snapshot cache", "--snapshot-cache")
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

// Index is a cache file as a scan uses it: its records by directory, each
// decoded only when a loading worker asks for it. A nil Index is empty.
type Index struct {
	// Stamp is the stamp the file was written with.
	Stamp   int64
	records map[string]record
	// Files and Skills count the entries, so that a scan can tell
	// whether rewriting the file would change it.
	Files, Skills int
}

// record is one directory's entries, still encoded.
type record struct{ skill, files []byte }

// Load reads the cache file; a missing, old-format or corrupt one is
// empty (it only ever saves work).
func (c *Cache) Load() *Index {
	b, err := os.ReadFile(c.path)
	if err != nil {
		return &Index{}
	}
	x, ok := Decode(b)
	if !ok {
		return &Index{}
	}
	return x
}

// Decode reads a cache file's bytes; ok is false for anything that is not
// a whole cache file of this format.
func Decode(b []byte) (x *Index, ok bool) {
	rest, ok := bytes.CutPrefix(b, []byte(Magic))
	if !ok {
		return nil, false
	}
	d := Decoder{b: rest}
	if d.Uvarint() != format {
		return nil, false
	}
	x = &Index{Stamp: d.Varint()}
	x.Files, _ = d.Length()
	x.Skills, _ = d.Length()
	n, _ := d.Length()
	x.records = make(map[string]record, n)
	for range n {
		dir := d.Str()
		rec := record{skill: d.Raw(), files: d.Raw()}
		if len(rec.skill) == 0 {
			rec.skill = nil
		}
		if _, dup := x.records[dir]; dup {
			return nil, false
		}
		x.records[dir] = rec
	}
	if !d.Done() {
		return nil, false
	}
	return x, true
}

// Skill is the encoded skill entry for dir, or nil.
func (x *Index) Skill(dir string) []byte {
	if x == nil {
		return nil
	}
	return x.records[dir].skill
}

// FileEntries are the encoded file entries recorded for dir, or nil.
func (x *Index) FileEntries(dir string) []byte {
	if x == nil {
		return nil
	}
	return x.records[dir].files
}

// Dirs are the directories that have records, in no order.
func (x *Index) Dirs() iter.Seq[string] {
	if x == nil {
		return func(func(string) bool) {}
	}
	return maps.Keys(x.records)
}

// Has reports whether dir has a record: a skill entry or file entries.
func (x *Index) Has(dir string) bool {
	if x == nil {
		return false
	}
	r, ok := x.records[dir]
	return ok && (r.skill != nil || r.files != nil)
}

// Record is what Save writes for one directory.
type Record struct {
	Dir          string
	Skill, Files []byte
}

// Save writes the records (in any order) with their counts of file and
// skill entries, atomically (a torn cache would only be ignored, but is
// never written), and keeps the directory bounded. Unlike an artifact it
// is not fsynced: a cache lost in a crash only costs the next scan time,
// and an fsync of megabytes would cost every scan that learned something.
func (c *Cache) Save(recs []Record, files, skills int) error {
	slices.SortFunc(recs, func(a, b Record) int { return strings.Compare(a.Dir, b.Dir) })
	e := Encoder{B: []byte(Magic)}
	e.Uvarint(format)
	e.Varint(c.stamp)
	e.Length(files, false)
	e.Length(skills, false)
	e.Length(len(recs), false)
	for _, r := range recs {
		e.Str(r.Dir)
		e.Raw(r.Skill)
		e.Raw(r.Files)
	}
	if err := artifacts.WriteCache(c.path, func(w io.Writer) error { _, err := w.Write(e.B); return err }); err != nil {
		return err
	}
	prune(filepath.Dir(c.path), c.path)
	return nil
}

// maxFiles bounds a cache directory: one file per set of roots, and CI
// jobs scan a new temporary workspace every time.
const maxFiles = 64

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
	if len(files) <= maxFiles {
		return
	}
	slices.SortFunc(files, func(a, b file) int { return cmp.Compare(a.mod, b.mod) })
	for _, f := range files[:len(files)-maxFiles] {
		if f.path != keep {
			os.Remove(f.path)
		}
	}
}

// Remove deletes the cache file (tests, --no-snapshot-cache clean-ups).
func (c *Cache) Remove() error {
	err := os.Remove(c.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
