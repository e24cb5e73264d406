// Command gitfetch measures what `harness skills add` costs from a git
// server on loopback (git http-backend, counting the bytes it sends) for
// a 1 KiB skill beside a large incompressible blob: on another branch,
// elsewhere in the skill's commit, and in the skill's own directory,
// each from a server that filters blobs and from one that does not.
//
//	go run ./testdata/bench/gitfetch -harness after=bin/harness,before=/tmp/harness-old
package main

import (
	"bytes"
	"crypto/rand"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	bins := flag.String("harness", "bin/harness", "harness binaries to compare: NAME=PATH,... (or one PATH)")
	blobMiB := flag.Int("blob", 200, "the large blob, MiB")
	flag.Parse()
	tmp, err := os.MkdirTemp("", "gitfetch")
	check(err)
	defer os.RemoveAll(tmp)
	repos := filepath.Join(tmp, "repos")
	skill := "---\nname: pdf\ndescription: PDFs. Use for PDFs.\n---\nbody\n"

	// skills: main holds the skill; big holds it and the blob at the top.
	w := filepath.Join(tmp, "w")
	write(filepath.Join(w, "skills/pdf/SKILL.md"), strings.NewReader(skill))
	git(w, "init", "-q", "-b", "main")
	git(w, "add", "-A")
	git(w, "commit", "-q", "-m", "skill")
	git(w, "checkout", "-q", "-b", "big")
	write(filepath.Join(w, "big.bin"), io.LimitReader(rand.Reader, int64(*blobMiB)<<20))
	git(w, "-c", "core.compression=0", "add", "-A")
	git(w, "commit", "-q", "-m", "big")
	git(w, "checkout", "-q", "main")
	// inskill: the blob in the skill's own directory.
	in := filepath.Join(tmp, "in")
	write(filepath.Join(in, "skills/pdf/SKILL.md"), strings.NewReader(skill))
	write(filepath.Join(in, "skills/pdf/big.bin"), io.LimitReader(rand.Reader, int64(*blobMiB)<<20))
	git(in, "init", "-q", "-b", "main")
	git(in, "-c", "core.compression=0", "add", "-A")
	git(in, "commit", "-q", "-m", "skill")
	for _, r := range []struct{ name, from string }{{"skills", w}, {"inskill", in}} {
		for _, filter := range []string{"filter", "nofilter"} {
			dst := filepath.Join(repos, r.name+"-"+filter+".git")
			git(tmp, "clone", "-q", "--bare", r.from, dst)
			git(dst, "config", "uploadpack.allowFilter", fmt.Sprint(filter == "filter"))
		}
	}

	var sent atomic.Int64
	out, _ := exec.Command("git", "--exec-path").Output()
	h := &cgi.Handler{Path: filepath.Join(strings.TrimSpace(string(out)), "git-http-backend"), Env: []string{"GIT_PROJECT_ROOT=" + repos, "GIT_HTTP_EXPORT_ALL=1"}}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { h.ServeHTTP(counting{rw, &sent}, r) }))
	defer srv.Close()
	trust := filepath.Join(tmp, "trust.yaml")
	write(trust, strings.NewReader(fmt.Sprintf("skills:\n  trustedSources: [%q]\n", srv.URL+"/")))

	fmt.Printf("| source (%d MiB blob) | build | wall | peak RSS (largest process) | bytes sent | outcome |\n| --- | --- | --- | --- | --- | --- |\n", *blobMiB)
	for _, c := range []struct{ what, src string }{
		{"blob on another branch", "skills-%s.git#skills/pdf@main"},
		{"blob elsewhere in the skill's commit", "skills-%s.git#skills/pdf@big"},
		{"blob in the skill's directory", "inskill-%s.git#skills/pdf"},
	} {
		for _, filter := range []string{"filter", "nofilter"} {
			for _, b := range strings.Split(*bins, ",") {
				name, path, ok := strings.Cut(b, "=")
				if !ok {
					name, path = "", b
				}
				root := filepath.Join(tmp, "root")
				os.RemoveAll(root)
				sent.Store(0)
				cmd := exec.Command(path, "skills", "add", srv.URL+"/"+fmt.Sprintf(c.src, filter), "--to", root, "--config", trust)
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				start := time.Now()
				err := cmd.Run()
				took := time.Since(start)
				result := "installed"
				if err != nil {
					result = strings.TrimSpace(strings.SplitN(stderr.String(), "\n", 2)[0])
					if i := strings.Index(result, ": "); i > 0 && len(result) > 110 {
						result = result[:110] + "…"
					}
				}
				rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss >> 10
				server := "filters"
				if filter == "nofilter" {
					server = "no filter"
				}
				fmt.Printf("| %s, server: %s | %s | %.2f s | %d MiB | %d | %s |\n", c.what, server, name, took.Seconds(), rss, sent.Load(), result)
			}
		}
	}
}

type counting struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (c counting) Write(b []byte) (int, error) {
	n, err := c.ResponseWriter.Write(b)
	c.n.Add(int64(n))
	return n, err
}

func git(dir string, args ...string) {
	os.MkdirAll(dir, 0o755)
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=b", "GIT_AUTHOR_EMAIL=b@example.invalid", "GIT_COMMITTER_NAME=b", "GIT_COMMITTER_EMAIL=b@example.invalid")
	if out, err := cmd.CombinedOutput(); err != nil {
		log.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func write(p string, r io.Reader) {
	check(os.MkdirAll(filepath.Dir(p), 0o755))
	f, err := os.Create(p)
	check(err)
	_, err = io.Copy(f, r)
	check(err)
	check(f.Close())
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
