package store

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// An embedding cache is used only where no other user can write it
// (whoever writes it decides which skill find_skills ranks first), and
// an entry is read by its descriptor: a FIFO there is a miss, not a wait.
func TestEmbeddingCacheTakesNothingPlanted(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	c := EmbeddingCache{Dir: dir}
	if err := c.Put("m", "pdf tools", []float64{1, 2}); err != nil {
		t.Fatal(err)
	}
	if v, ok := c.Get("m", "pdf tools"); !ok || len(v) != 2 {
		t.Fatalf("a private cache: %v %v", v, ok)
	}
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm()&0o077 != 0 {
		t.Fatalf("the cache was made %v, not private (%v)", fi.Mode().Perm(), err)
	}

	// Another user may write it: nothing in it is taken, nothing put.
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Get("m", "pdf tools"); ok {
		t.Fatal("a vector was taken from a cache other users may write")
	}
	if err := c.Put("m", "other", []float64{3}); err == nil {
		t.Fatal("a vector was put in a cache other users may write")
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}

	// An entry swapped for a FIFO.
	p := c.path("m", "fifo text")
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan bool, 1)
	go func() { _, ok := c.Get("m", "fifo text"); done <- ok }()
	select {
	case ok := <-done:
		if ok {
			t.Fatal("a FIFO gave a vector")
		}
	case <-time.After(10 * time.Second):
		if f, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		t.Fatal("the cache waited on a FIFO")
	}
}
