package gitsource

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"golang.org/x/sys/unix"
)

// The fetch is git's own (the git binary), not go-git's: go-git cannot
// ask for less than whole blobs (no partial clone) and holds a large
// blob in memory while it indexes the pack, so a repository's size, not
// the skill's, set what a fetch cost. git fetches one ref at depth 1,
// leaves blobs over the limit on the server where the server allows
// filters, and streams large blobs to disk; the kernel holds each git
// process to the limits (rlimits set before git starts), so a server
// that ignores depth and filter, or sends a pack built to blow up, ends
// the fetch rather than the machine. Reading the fetched commit is
// go-git's, on the repository git wrote.

// Limits bound one fetch.
type Limits struct {
	// File is the largest file a fetch may write: the pack
	// (RLIMIT_FSIZE of every git process).
	File int64
	// Blob is the largest blob a fetch brings: larger ones are left on
	// the server (--filter=blob:limit), and a walk that reaches one is
	// a *BlobError.
	Blob int64
	// Memory is the address space each git process may map
	// (RLIMIT_AS).
	Memory int64
}

// DefaultLimits are the bounds of harness's fetches: a blob as large as
// a whole skill may be (100 MiB), a pack of 256 MiB, 512 MiB of address
// space per git process.
func DefaultLimits() Limits {
	return Limits{File: 256 << 20, Blob: 100 << 20, Memory: 512 << 20}
}

// RefError is a ref the remote has no branch, tag or commit for.
type RefError struct{ URL, Ref string }

func (e *RefError) Error() string {
	return fmt.Sprintf("%s has no tag, branch or commit %q", e.URL, e.Ref)
}

// LimitError is a fetch that reached one of its Limits.
type LimitError struct {
	URL string
	// What is "pack" (Limits.File), "memory" (Limits.Memory) or
	// "processes" (more git processes at once than a fetch runs).
	What  string
	Limit int64
}

func (e *LimitError) Error() string {
	switch e.What {
	case "processes":
		return fmt.Sprintf("fetching %s started more than %d git processes at once (git fetching objects it lacks, again and again), so it was stopped", e.URL, e.Limit)
	case "memory":
		return fmt.Sprintf("fetching %s took more than %d MiB of memory (the fetch's limit), so it was stopped", e.URL, e.Limit>>20)
	}
	return fmt.Sprintf("%s sent more than %d MiB (the fetch's limit on what one ref's commit may cost), so the fetch was stopped", e.URL, e.Limit>>20)
}

// BlobError is a file of the tree walked that is over Limits.Blob.
type BlobError struct {
	URL, Commit, Path string
	// Size is -1 when the blob was left on the server.
	Size, Limit int64
}

func (e *BlobError) Error() string {
	if e.Size < 0 {
		return fmt.Sprintf("%s at %s: %s is larger than %d MiB (the fetch's limit on one file), so it was left on the server", e.URL, short(e.Commit), e.Path, e.Limit>>20)
	}
	return fmt.Sprintf("%s at %s: %s is %d bytes, larger than %d MiB (the fetch's limit on one file)", e.URL, short(e.Commit), e.Path, e.Size, e.Limit>>20)
}

// fetched is the ref a fetch writes what it fetched to.
const fetched = "refs/harness/fetched"

type fetcher struct {
	ctx      context.Context
	url, dir string
	lim      Limits
	// lastPID is the process group of the last git command run.
	lastPID int
}

// newFetcher makes dir an empty bare repository (removing what a failed
// attempt left there) whose remote origin is url.
func newFetcher(ctx context.Context, url, dir string, lim Limits) (*fetcher, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, errors.New("fetching skills from git needs the git binary on PATH")
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	f := &fetcher{ctx: ctx, url: url, dir: dir, lim: lim}
	if _, err := f.git("init", "-q", "--bare", "--template=", dir); err != nil {
		return nil, err
	}
	if _, err := f.git("-C", dir, "config", "remote.origin.url", url); err != nil {
		return nil, err
	}
	return f, nil
}

// want is what to ask the remote for to get the commit ref names: a ref
// name the remote lists, or a commit id. The order is Resolve's of old:
// a tag before a branch of the same name.
func (f *fetcher) want(ref string) (string, error) {
	if ref == "" {
		return "HEAD", nil
	}
	out, err := f.git("-C", f.dir, "ls-remote", "origin")
	if err != nil {
		return "", err
	}
	if want, ok := pickWant(out, ref); ok {
		return want, nil
	}
	return "", &RefError{URL: f.url, Ref: ref}
}

// pickWant is what to ask for to get the commit ref names, given the
// remote's listing (git ls-remote: "ID<TAB>NAME" lines, a server's words):
// the tag or branch of that name, a full ref name listed, the one listed
// ref whose commit an abbreviated id (4 hex digits or more) begins, or a
// full commit id as itself. A listed name that git would read as an
// option or as two refs is never picked.
func pickWant(listing []byte, ref string) (string, bool) {
	names := map[string]bool{}
	byPrefix := map[string]string{}
	abbrev := len(ref) >= 4 && isHex(ref)
	sc := bufio.NewScanner(bytes.NewReader(listing))
	for sc.Scan() {
		id, name, ok := strings.Cut(sc.Text(), "\t")
		name = strings.TrimSuffix(name, "^{}")
		if !ok || !strings.HasPrefix(name, "refs/") || strings.ContainsFunc(name, func(r rune) bool { return r <= ' ' || r == ':' || r == 0x7f }) {
			continue
		}
		names[name] = true
		if abbrev && plumbing.IsHash(id) && strings.HasPrefix(strings.ToLower(id), strings.ToLower(ref)) {
			byPrefix[strings.ToLower(id)] = name
		}
	}
	for _, n := range []string{"refs/tags/" + ref, "refs/heads/" + ref, ref} {
		if names[n] {
			return n, true
		}
	}
	switch {
	case plumbing.IsHash(ref):
		return strings.ToLower(ref), true
	case len(byPrefix) == 1:
		// The commit a listed ref names: ask for the ref (a server
		// always sends what it lists). Two commits of one prefix name
		// neither.
		for _, n := range byPrefix {
			return n, true
		}
	}
	return "", false
}

// fetch asks the remote for want (a ref name or a commit id) and writes
// it to the ref fetched: only it, shallow when told, no tags, no blob
// over the limit where the server filters.
func (f *fetcher) fetch(want string, shallow bool) error {
	args := []string{"-C", f.dir,
		"-c", "remote.origin.promisor=true",
		// Every received pack is kept as a pack (index-pack streams a
		// large blob to it), never exploded into loose objects.
		"-c", "transfer.unpackLimit=1",
		"-c", "core.bigFileThreshold=1m",
		"-c", "pack.threads=1",
		"fetch", "-q", "--no-tags", "--no-write-fetch-head", "--no-auto-gc", "--no-recurse-submodules",
		"--filter=blob:limit=" + strconv.FormatInt(f.lim.Blob, 10)}
	if shallow {
		args = append(args, "--depth", "1")
	}
	_, err := f.git(append(args, "origin", "+"+want+":"+fetched)...)
	if err == nil {
		return nil
	}
	if f.overFile() {
		return &LimitError{URL: f.url, What: "pack", Limit: f.lim.File}
	}
	if s := err.Error(); strings.Contains(s, "Out of memory") || strings.Contains(s, "Cannot allocate memory") || strings.Contains(s, "mmap failed") {
		return &LimitError{URL: f.url, What: "memory", Limit: f.lim.Memory}
	}
	return err
}

// overFile reports whether a file of the repository reached the file
// limit: git's index-pack killed by SIGXFSZ, which git itself reports
// only as bad output of its child.
func (f *fetcher) overFile() bool {
	over := false
	filepath.WalkDir(f.dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil && fi.Size() >= f.lim.File {
				over = true
				return filepath.SkipAll
			}
		}
		return nil
	})
	return over
}

// open reads the repository fetch wrote: large blobs are read from the
// pack as they are read, never whole into memory.
func (f *fetcher) open() (*Repo, error) {
	st := filesystem.NewStorageWithOptions(osfs.New(f.dir), cache.NewObjectLRUDefault(), filesystem.Options{LargeObjectThreshold: 1 << 20})
	r, err := git.Open(st, nil)
	if err != nil {
		return nil, fmt.Errorf("read what was fetched from %s: %w", f.url, err)
	}
	ref, err := r.Reference(plumbing.ReferenceName(fetched), false)
	if err != nil {
		return nil, fmt.Errorf("read what was fetched from %s: %w", f.url, err)
	}
	h := ref.Hash()
	// An annotated tag (or a tag of a tag) names its commit through it.
	for range 8 {
		t, err := r.TagObject(h)
		if err != nil {
			break
		}
		h = t.Target
	}
	if _, err := r.CommitObject(h); err != nil {
		return nil, fmt.Errorf("%s: what was fetched is not a commit: %w", f.url, err)
	}
	return &Repo{URL: f.url, Commit: h.String(), repo: r, lim: f.lim}, nil
}

// notThere reports whether a fetch of a commit id failed because the
// server would not send it (no such commit, or none it hands out).
func notThere(err error) bool {
	s := err.Error()
	return strings.Contains(s, "not our ref") || strings.Contains(s, "couldn't find remote ref") || strings.Contains(s, "no such remote ref") || strings.Contains(s, "unadvertised object")
}

// gitArgs keep git from taking a transport no source names (ext::,
// fd::), from following redirects and from running hooks.
var gitArgs = []string{
	"-c", "protocol.allow=never",
	"-c", "protocol.https.allow=always", "-c", "protocol.http.allow=always",
	"-c", "protocol.ssh.allow=always", "-c", "protocol.git.allow=always", "-c", "protocol.file.allow=always",
	// Trust is judged on the URL a source names: a redirect would
	// fetch from a host trust never saw while the lock records the
	// trusted URL.
	"-c", "http.followRedirects=false",
	"-c", "core.hooksPath=/dev/null",
}

// gateScript waits for harness to set its rlimits (one line on
// descriptor 3), so that they hold from git's first instruction and for
// every process git starts.
const gateScript = `read -r go <&3 || exit 125; exec 3<&-; exec "$@"`

// git runs git with args under the limits and returns its output (at
// most 16 MiB: a listing of refs larger than that is refused).
func (f *fetcher) git(args ...string) ([]byte, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	defer w.Close()
	cmd := exec.CommandContext(f.ctx, "/bin/sh", append([]string{"-c", gateScript, "sh", "git"}, append(gitArgs, args...)...)...)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=/bin/false", "SSH_ASKPASS=/bin/false", "GIT_PROTOCOL_FROM_USER=0", "LC_ALL=C",
		// git 2.44 and later: never fetch an object git lacks from the
		// partial clone's remote (older gits are held by watchGroup).
		"GIT_NO_LAZY_FETCH=1")
	cmd.ExtraFiles = []*os.File{r}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// A process that left git's group and kept its output open must not
	// hold the fetch past its deadline.
	cmd.WaitDelay = 5 * time.Second
	out := &capped{max: 16 << 20}
	errOut := &capped{max: 64 << 10, drop: true}
	cmd.Stdout, cmd.Stderr = out, errOut
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	r.Close()
	for _, l := range []struct {
		res int
		n   int64
	}{{unix.RLIMIT_AS, f.lim.Memory}, {unix.RLIMIT_FSIZE, f.lim.File}} {
		rl := unix.Rlimit{Cur: uint64(l.n), Max: uint64(l.n)}
		// Only root may raise a hard limit: under a lower one already,
		// that one holds.
		var own unix.Rlimit
		if unix.Getrlimit(l.res, &own) == nil && own.Max < rl.Max {
			rl.Cur, rl.Max = own.Max, own.Max
		}
		if err := unix.Prlimit(cmd.Process.Pid, l.res, &rl, nil); err != nil {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			cmd.Wait()
			return nil, fmt.Errorf("limit git: %w", err)
		}
	}
	w.Write([]byte("go\n"))
	w.Close()
	f.lastPID = cmd.Process.Pid
	stop := make(chan struct{})
	var forked atomic.Bool
	go watchGroup(cmd.Process.Pid, stop, &forked)
	err = cmd.Wait()
	close(stop)
	// git's children stay in its process group: none outlives the fetch.
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if forked.Load() {
		return nil, &LimitError{URL: f.url, What: "processes", Limit: maxProcs}
	}
	if err != nil {
		if f.ctx.Err() != nil {
			return nil, fmt.Errorf("git %s: %w", subcommand(args), f.ctx.Err())
		}
		msg := strings.TrimSpace(string(errOut.b))
		switch {
		case out.over:
			msg = "the server listed more than 16 MiB of refs"
		case redirected.MatchString(msg):
			msg = "the server answered with a redirect, which is refused: trust is judged on the URL a source names (" + msg + ")"
		}
		return nil, fmt.Errorf("git %s: %v: %s", subcommand(args), err, msg)
	}
	return out.b, nil
}

// maxProcs is the most processes one git command may run at once. A
// fetch takes three or four (git, remote-http, fetch-pack, index-pack);
// git fetches an object it lacks from a partial clone's remote by
// starting another fetch, which a server can make recurse without end
// (git's dumb HTTP walker does), and RLIMIT_NPROC does not bind root.
const maxProcs = 16

// watchGroup kills the process group pgid when it holds more than
// maxProcs processes, until stop is closed.
func watchGroup(pgid int, stop <-chan struct{}, forked *atomic.Bool) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		if groupSize(pgid) > maxProcs {
			forked.Store(true)
			syscall.Kill(-pgid, syscall.SIGKILL)
			return
		}
	}
}

// groupSize counts the live processes of process group pgid (field 5
// of /proc/PID/stat, after the parenthesised command name; zombies, dead
// and waiting for a parent to reap them, are not counted).
func groupSize(pgid int) int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 2 && f[0] != "Z" && f[2] == strconv.Itoa(pgid) {
			n++
		}
	}
	return n
}

// redirected is git's report of an HTTP redirect it did not follow.
var redirected = regexp.MustCompile(`returned error: 3[0-9][0-9]`)

// subcommand is the git command args run (fetch, ls-remote), as a
// person names it.
func subcommand(args []string) string {
	for i := 0; i < len(args); i++ {
		if args[i] == "-c" || args[i] == "-C" {
			i++
			continue
		}
		return args[i]
	}
	return ""
}

// capped keeps at most max bytes and then fails the write, which ends
// the process writing (drop: keeps quiet about the rest instead).
type capped struct {
	b    []byte
	max  int
	over bool
	drop bool
}

func (c *capped) Write(p []byte) (int, error) {
	if len(c.b)+len(p) > c.max {
		if c.drop {
			c.b = append(c.b, p[:max(0, c.max-len(c.b))]...)
			return len(p), nil
		}
		c.over = true
		return 0, errors.New("output over its limit")
	}
	c.b = append(c.b, p...)
	return len(p), nil
}

func isHex(s string) bool {
	for _, r := range strings.ToLower(s) {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
			return false
		}
	}
	return true
}
