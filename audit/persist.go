package audit

import (
	"bufio"
	"encoding/gob"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/cfc"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/skills"
)

// cacheFormat changes with the file's layout; the rule catalog's version
// is in the file name, so findings of older rules are never read.
const cacheFormat = 1

// maxCacheEntries bounds the file: past it, a save keeps only what this
// process looked up or learned.
const maxCacheEntries = 100_000

type cacheFile struct {
	Format  int
	Entries map[string][]record.Finding
}

// OpenCache returns a cache kept in dir (the snapshot cache directory)
// for the current rule catalog, holding what earlier runs saved there.
// A missing, unreadable or old file is an empty cache: it only saves
// work. A directory others could write (skills.PrivateDir) is neither
// read nor written: the cache is then this process's only. Save writes it
// back.
func OpenCache(dir string) *Cache {
	c := NewCache()
	if skills.PrivateDir(dir) != nil {
		// Not trusted (or not there yet): this process's cache only.
		return c
	}
	// Not ".cache": the snapshot cache prunes those by age.
	c.path = filepath.Join(dir, "findings-"+cfc.CatalogVersion()+".gob")
	c.fresh = map[string]bool{}
	f, err := os.Open(c.path)
	if err != nil {
		return c
	}
	defer f.Close()
	var cf cacheFile
	if gob.NewDecoder(bufio.NewReader(f)).Decode(&cf) == nil && cf.Format == cacheFormat && cf.Entries != nil {
		c.m = cf.Entries
	}
	return c
}

// Save writes a persistent cache back when scans added to it, atomically
// and without fsync (a cache lost in a crash costs the next run a scan).
func (c *Cache) Save() error {
	if c == nil || c.path == "" {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.learned {
		return nil
	}
	if len(c.m) > maxCacheEntries {
		// Bounded, crudely: start again from what this process added.
		maps.DeleteFunc(c.m, func(k string, _ []record.Finding) bool { return !c.fresh[k] })
	}
	err := artifacts.WriteCache(c.path, func(w io.Writer) error {
		return gob.NewEncoder(w).Encode(cacheFile{Format: cacheFormat, Entries: c.m})
	})
	if err != nil {
		return fmt.Errorf("findings cache: %w", err)
	}
	c.learned = false
	return nil
}
