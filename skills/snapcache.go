package skills

import (
	"bufio"
	"cmp"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
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

// cacheFormat changes whenever the entry layout does; an older file is
// ignored.
const cacheFormat = 3

type cacheFile struct {
	Format  int
	Stamp   int64 // file-system time (ns) taken before the scan
	Entries []cacheEntry
	Skills  []skillEntry
}

type cacheEntry struct {
	Path        string
	Stat        string
	Digest      artifacts.Digest
	Size        int64
	ContentKind string
	Shebang     string
	Runtime     string
}

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

// cached is what a cache file offers a scan: digests by host path and
// loaded skills by directory.
type cached struct {
	files  map[string]*Resource
	skills map[string]*skillEntry
}

// load reads the entries; a missing, old-format or unreadable cache is
// empty (it only ever saves work).
func (c *SnapshotCache) load() cached {
	out := cached{files: map[string]*Resource{}, skills: map[string]*skillEntry{}}
	f, err := os.Open(c.path)
	if err != nil {
		return out
	}
	defer f.Close()
	var cf cacheFile
	if gob.NewDecoder(bufio.NewReaderSize(f, 1<<20)).Decode(&cf) != nil || cf.Format != cacheFormat {
		return out
	}
	for i := range cf.Entries {
		e := &cf.Entries[i]
		if !olderThan(e.Stat, cf.Stamp) {
			continue
		}
		out.files[e.Path] = &Resource{HostPath: e.Path, Stat: e.Stat, Digest: e.Digest, Size: e.Size, ContentKind: e.ContentKind, Shebang: e.Shebang, Runtime: e.Runtime}
	}
	for i := range cf.Skills {
		e := &cf.Skills[i]
		if allOlder(e.Stats, cf.Stamp) {
			out.skills[e.Dir] = e
		}
	}
	return out
}

func allOlder(stats []pathStat, stamp int64) bool {
	for _, ps := range stats {
		if !olderThan(ps.Stat, stamp) {
			return false
		}
	}
	return len(stats) > 0
}

// entries counts the resources of reg that save would keep.
func (c *SnapshotCache) entries(reg *Registry) int {
	n := 0
	for i := range reg.Skills {
		for j := range reg.Skills[i].Resources {
			r := &reg.Skills[i].Resources[j]
			if r.Stat != "" && len(r.Diagnostics) == 0 && olderThan(r.Stat, c.stamp) {
				n++
			}
		}
	}
	return n
}

// save writes what the scan digested, leaving out racily clean entries,
// atomically (a torn cache would only be ignored, but is never written).
// Unlike an artifact it is not fsynced: a cache lost in a crash only
// costs the next scan time, and an fsync of megabytes would cost every
// scan that learned something.
func (c *SnapshotCache) save(reg *Registry, skills []skillEntry) error {
	cf := cacheFile{Format: cacheFormat, Stamp: c.stamp}
	for _, e := range skills {
		if allOlder(e.Stats, c.stamp) {
			cf.Skills = append(cf.Skills, e)
		}
	}
	for i := range reg.Skills {
		for j := range reg.Skills[i].Resources {
			r := &reg.Skills[i].Resources[j]
			if r.Stat == "" || len(r.Diagnostics) > 0 || !olderThan(r.Stat, c.stamp) {
				continue
			}
			cf.Entries = append(cf.Entries, cacheEntry{Path: r.HostPath, Stat: r.Stat, Digest: r.Digest, Size: r.Size,
				ContentKind: r.ContentKind, Shebang: r.Shebang, Runtime: r.Runtime})
		}
	}
	if err := artifacts.WriteCache(c.path, func(w io.Writer) error { return gob.NewEncoder(w).Encode(&cf) }); err != nil {
		return err
	}
	prune(filepath.Dir(c.path), c.path)
	return nil
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
	parts := strings.Split(stat, ":")
	if len(parts) != 5 {
		return false
	}
	m, err1 := strconv.ParseInt(parts[3], 10, 64)
	c, err2 := strconv.ParseInt(parts[4], 10, 64)
	return err1 == nil && err2 == nil && m < stamp && c < stamp
}

// Remove deletes the cache file (tests, --no-snapshot-cache clean-ups).
func (c *SnapshotCache) Remove() error {
	err := os.Remove(c.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
