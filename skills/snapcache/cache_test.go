package snapcache

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

func TestCacheDirectoryIsBounded(t *testing.T) {
	dir := t.TempDir()
	for i := range maxFiles + 10 {
		p := filepath.Join(dir, strconv.Itoa(i)+".cache")
		os.WriteFile(p, []byte("x"), 0o600)
		old := time.Now().Add(-time.Duration(maxFiles+20-i) * time.Minute)
		os.Chtimes(p, old, old)
	}
	c := OpenAt(filepath.Join(dir, "new.cache"), 1)
	if err := c.Save(nil, 0, 0); err != nil {
		t.Fatal(err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*.cache"))
	if len(left) != maxFiles {
		t.Errorf("%d cache files left, want %d", len(left), maxFiles)
	}
	if _, err := os.Stat(c.path); err != nil {
		t.Error("the cache just written was pruned")
	}
	if _, err := os.Stat(filepath.Join(dir, "0.cache")); err == nil {
		t.Error("the oldest cache file was kept")
	}
}
