package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/harness-dev/harness/gitsource"
	"github.com/harness-dev/harness/internal/testenv"
	"github.com/harness-dev/harness/skills"
)

// hostileBlob is the size of the incompressible file the hostile
// repository keeps on a branch nobody asks for: large enough that
// holding it shows in the fetching process's peak memory, small enough
// to make in a few seconds.
const hostileBlob = 96 << 20

// countingServer serves the bare repositories under dir over smart HTTP
// and counts the bytes of every response body.
func countingServer(t *testing.T, dir string) (string, *atomic.Int64) {
	var sent atomic.Int64
	h := testenv.GitHandler(dir)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(countingWriter{w, &sent}, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &sent
}

type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (c countingWriter) Write(b []byte) (int, error) {
	n, err := c.ResponseWriter.Write(b)
	c.n.Add(int64(n))
	return n, err
}

// TestFetchCostsTheSkillNotTheRepository adds a skill from a small
// branch of a repository whose other branch holds a large incompressible
// blob, in a child process, and bounds what that costs: the child's peak
// memory (its own and every git process it waited for) and the bytes the
// server sent stay near the skill's size, not the repository's.
func TestFetchCostsTheSkillNotTheRepository(t *testing.T) {
	if env := os.Getenv("STORE_TEST_FETCH"); env != "" {
		url, dir, _ := strings.Cut(env, "\n")
		st, err := Open(filepath.Join(dir, "store"), nil)
		if err == nil {
			_, err = Add(context.Background(), AddOptions{Source: gitsource.Source{URL: url, Path: "skills/pdf", Ref: "main"}, Root: filepath.Join(dir, "root"),
				TrustedSources: []string{url}, Approve: Approval{UpTo: skills.RiskCritical}, Store: st})
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	testenv.NeedGit(t)
	work, repos := t.TempDir(), t.TempDir()
	testenv.WriteTree(t, work, map[string]string{"skills/pdf/SKILL.md": "---\nname: pdf\ndescription: PDFs. Use for PDFs.\n---\nbody\n"})
	testenv.Git(t, work, "init", "-q", "-b", "main")
	testenv.Git(t, work, "add", "-A")
	testenv.Git(t, work, "commit", "-q", "-m", "skill")
	testenv.Git(t, work, "checkout", "-q", "-b", "big")
	f, err := os.Create(filepath.Join(work, "big.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.CopyN(f, rand.Reader, hostileBlob); err != nil {
		t.Fatal(err)
	}
	f.Close()
	// Stored, not deflated: random bytes do not shrink, and making the
	// repository should not take longer than the fetch it tests.
	testenv.Git(t, work, "-c", "core.compression=0", "add", "big.bin")
	testenv.Git(t, work, "commit", "-q", "-m", "big")
	testenv.Git(t, work, "checkout", "-q", "main")
	testenv.Git(t, repos, "clone", "-q", "--bare", work, "skills.git")
	srv, sent := countingServer(t, repos)

	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFetchCostsTheSkillNotTheRepository$")
	cmd.Env = append(os.Environ(), "STORE_TEST_FETCH="+srv+"/skills.git\n"+dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("add: %v\n%s", err, out.String())
	}
	took := time.Since(start)
	if _, err := os.Stat(filepath.Join(dir, "root", "pdf", "SKILL.md")); err != nil {
		t.Fatal(err)
	}
	// ru_maxrss is in KiB on Linux: the largest of the child and the
	// processes it waited for.
	peak := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
	t.Logf("add of a 1 KiB skill beside a %d MiB blob: %v, peak RSS %d MiB, %d bytes sent", hostileBlob>>20, took.Round(time.Millisecond), peak>>20, sent.Load())
	// A fetched blob is held whole (it took 120 MiB); harness itself takes
	// about 20 MiB, and 56 MiB under the race detector.
	if peak > hostileBlob {
		t.Errorf("adding a 1 KiB skill took %d MiB of memory: the %d MiB blob on another branch was fetched", peak>>20, hostileBlob>>20)
	}
	if sent.Load() > 1<<20 {
		t.Errorf("the server sent %d KiB for a 1 KiB skill", sent.Load()>>10)
	}
}
