package workspace

import (
	"errors"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// FuzzResolve checks the one function every file tool trusts first: any
// path it accepts stays inside the workspace, is clean, and never names a
// protected path.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{"a.txt", "/workspace", "/workspace/a/../b", "../x", "/etc/passwd", "a/../../b", ".harness/runs/x", "././/a", "/workspace/..", "\x00", "a\\..\\..\\b"} {
		f.Add(s, "sub")
	}
	f.Fuzz(func(t *testing.T, p, cwd string) {
		cwd = path.Clean("/" + cwd)[1:]
		if cwd == "" {
			cwd = "."
		}
		ws := &Workspace{Host: "/host/ws", Sandbox: DefaultSandbox, Cwd: cwd, Protected: []string{"/host/ws/.harness/runs"}}
		rel, err := ws.Resolve(p)
		if err != nil {
			return
		}
		if rel != path.Clean(rel) || strings.HasPrefix(rel, "/") || rel == ".." || strings.HasPrefix(rel, "../") {
			t.Fatalf("Resolve(%q) = %q: not a clean relative path inside the workspace", p, rel)
		}
		if ws.IsProtected(rel) {
			t.Fatalf("Resolve(%q) = %q: a protected path was accepted", p, rel)
		}
		if !Within(ws.Host, filepath.Join(ws.Host, rel)) {
			t.Fatalf("Resolve(%q) = %q escapes", p, rel)
		}
	})
}

// TestSwapIntoRunDirectory is the race a path check loses: while tools
// read and write d/..., another process keeps exchanging the directory d
// with a symbolic link into the run directory (renameat2 RENAME_EXCHANGE).
// Every open is checked on its descriptor, so not one read may return the
// run record and not one write may land in the run directory.
func TestSwapIntoRunDirectory(t *testing.T) {
	host, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	runDir := filepath.Join(host, ".harness", "runs", "r1")
	for p, c := range map[string]string{
		filepath.Join(runDir, "run.json"):    "RUN RECORD",
		filepath.Join(host, "d", "run.json"): "decoy",
	} {
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(c), 0o644)
	}
	if err := os.Symlink(".harness/runs/r1", filepath.Join(host, "lnk")); err != nil {
		t.Fatal(err)
	}
	ws, err := Open(host, DefaultSandbox, ".", []string{filepath.Join(host, ".harness", "runs")})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()

	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			unix.Renameat2(unix.AT_FDCWD, filepath.Join(host, "d"), unix.AT_FDCWD, filepath.Join(host, "lnk"), unix.RENAME_EXCHANGE)
		}
	}()
	var leaked, refused int
	for i := 0; i < 3000; i++ {
		if f, err := ws.Open("d/run.json"); err == nil {
			b, _ := io.ReadAll(f)
			f.Close()
			if string(b) == "RUN RECORD" {
				leaked++
			}
		} else {
			refused++
		}
		ws.WriteFile("d/planted.txt", []byte("x"))
	}
	stop.Store(true)
	wg.Wait()
	if leaked > 0 {
		t.Errorf("%d reads returned the run record", leaked)
	}
	if _, err := os.Stat(filepath.Join(runDir, "planted.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a write landed in the run directory (%v)", err)
	}
	t.Logf("%d of 3000 reads refused while the swap raced", refused)
	if refused == 0 {
		t.Log("the swap never won a race in this run; the descriptor check was not exercised")
	}
}

func TestProtectedByName(t *testing.T) {
	host := t.TempDir()
	ws, err := Open(host, DefaultSandbox, ".", []string{filepath.Join(host, "runs")})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	for _, p := range []string{"/workspace/runs", "/workspace/runs/x/run.json", "runs/../runs/a", "./runs"} {
		if _, err := ws.Resolve(p); AsRefusal(err).Code != "path_protected" {
			t.Errorf("Resolve(%q) = %v, want path_protected", p, err)
		}
	}
	if _, err := ws.Resolve("runsx/a"); err != nil {
		t.Errorf("a sibling with a longer name is not protected: %v", err)
	}
}
