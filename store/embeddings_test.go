package store

import (
	"os"
	"path/filepath"
	"testing"
)

func TestEmbeddingCache(t *testing.T) {
	c := EmbeddingCache{Dir: t.TempDir()}
	if _, ok := c.Get("m", "text"); ok {
		t.Fatal("hit in an empty cache")
	}
	if err := c.Put("m", "text", []float64{1, 2}); err != nil {
		t.Fatal(err)
	}
	if v, ok := c.Get("m", "text"); !ok || len(v) != 2 || v[1] != 2 {
		t.Errorf("get = %v %v", v, ok)
	}
	if _, ok := c.Get("other-model", "text"); ok {
		t.Error("a vector of another model was served")
	}
	// A corrupt entry is a miss, not an error.
	os.WriteFile(c.path("m", "text"), []byte("{"), 0o644)
	if _, ok := c.Get("m", "text"); ok {
		t.Error("a corrupt entry was served")
	}
	// A model name cannot lead out of the directory.
	if p := c.path("../../etc", "x"); filepath.Dir(filepath.Dir(filepath.Dir(p))) != c.Dir {
		t.Errorf("path %s leaves %s", p, c.Dir)
	}
	if (EmbeddingCache{}).Put("m", "t", []float64{1}) != nil {
		t.Error("a cache without a directory must be a no-op")
	}
}
