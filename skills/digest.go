package skills

// Digesting a skill's files: inline while they are listed, on a worker
// pool, or from an earlier record whose fingerprint still matches.

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zeebo/blake3"
	"golang.org/x/sys/unix"

	"github.com/harness-dev/harness/artifacts"
)

// inlineDigest lets the goroutine that lists a skill digest its small
// regular files while it lists them, each opened from its directory's
// descriptor (openInDir). For a root of many small skills that is one
// path component per open instead of three, and no hand-over to a digest
// worker. It is used only where no earlier record (a snapshot-cache
// entry, a batch's previous snapshot) could spare reading the file.
type inlineDigest struct {
	buf  []byte // one read's worth; a larger file goes to the digest workers
	h    *blake3.Hasher
	read *atomic.Int64 // the digester's count of files read
}

// inlineMax is the largest file digested inline: a larger one is worth
// handing to a digest worker, so that one skill of large files does not
// leave the other CPUs idle.
const inlineMax = 64 << 10

// digest digests file name of directory dirfd into r when it is a
// regular file of at most inlineMax bytes. Anything else, including any
// failure, leaves r untouched for the digest workers, which open the file
// beneath the root and report what went wrong.
func (in *inlineDigest) digest(dirfd int, name string, r *Resource) {
	fd, err := openInDir(dirfd, name, fileFlags)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	if done, _, _ := readDigest(fd, r, in.buf, in.h, inlineMax); done {
		r.digested = true
		in.read.Add(1)
	}
}

type digestJob struct {
	root *scanRoot
	rel  string // path relative to the root
	res  *Resource
	// cached is the file's snapshot-cache entry, if it has one.
	cached *fileEntry
	// read says the file has already failed the reuse check: only a
	// read can digest it.
	read bool
}

// digester digests resources with a worker pool sized to the CPUs. Each
// file is read once, streamed: size, digest and the content sniff come
// from the same pass. Results land in place, so the outcome does not
// depend on scheduling.
type digester struct {
	previous map[string]*Resource // host path -> earlier record, for reuse
	// previousBefore bounds the file times (ns) of a reusable earlier
	// record: see racyMargin.
	previousBefore int64
	// read counts the files actually read (not reused).
	read atomic.Int64
	ctx  context.Context
	ch   chan digestJob
	wg   sync.WaitGroup
}

func (sc *scanner) startDigest(ctx context.Context) *digester {
	d := &digester{ctx: ctx, ch: make(chan digestJob, 256)}
	for range runtime.GOMAXPROCS(0) {
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			// Allocated on the first file that must be read: a scan
			// whose digests all come from Previous reads nothing.
			var buf []byte
			h := blake3.New()
			for j := range d.ch {
				if ctx.Err() == nil && (j.read || !d.reuse(j)) {
					d.read.Add(1)
					if buf == nil {
						buf = make([]byte, 256<<10)
					}
					digestResource(j, buf, h)
				}
			}
		}()
	}
	return d
}

// add queues every resource of s not already digested inline. The slice
// must not change until wait.
func (d *digester) add(s *Skill) {
	for i := range s.Resources {
		if !s.Resources[i].digested {
			d.ch <- d.job(s, i)
		}
	}
}

// queue queues jobs that settle left.
func (d *digester) queue(jobs []digestJob) {
	for _, j := range jobs {
		d.ch <- j
	}
}

func (d *digester) job(s *Skill, i int) digestJob {
	r := &s.Resources[i]
	return digestJob{root: s.fsRoot, rel: relTo(s.fsRoot.path, r.HostPath), res: r}
}

// settle reuses, on the calling goroutine, the digest of every resource
// of s whose snapshot-cache entry (cached, parallel to s.Resources, or
// nil) still matches, and returns jobs for the others. Settling a warm
// skill where it is loaded keeps its entries in the loader's reused
// buffer instead of handing tens of thousands of them, each allocated,
// to the digest workers.
func (d *digester) settle(s *Skill, cached []*fileEntry) []digestJob {
	var jobs []digestJob
	for i := range s.Resources {
		if s.Resources[i].digested {
			continue
		}
		j := d.job(s, i)
		if i < len(cached) && cached[i] != nil {
			j.cached = cached[i]
			if d.reuse(j) {
				continue
			}
			// The same check would fail again on a digest worker.
			j.cached, j.read = nil, true
		}
		jobs = append(jobs, j)
	}
	return jobs
}

// reuse copies an earlier record (Previous first, then the snapshot
// cache) when the file's stat fingerprint is unchanged, and reports
// whether it did.
func (d *digester) reuse(j digestJob) bool {
	prev, ok := d.previous[j.res.HostPath]
	ok = ok && prev.Stat != ""
	if !ok && j.cached == nil {
		return false
	}
	if c := j.cached; !ok && c.checked {
		c.reuseIn(j.res)
		return true
	}
	var st unix.Stat_t
	if err := unix.Fstatat(j.root.dirfd, j.rel, &st, 0); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return false
	}
	r := j.res
	if ok && st.Mtim.Nano() < d.previousBefore && st.Ctim.Nano() < d.previousBefore {
		if key := statKey(&st); key == prev.Stat {
			r.Digest, r.Size, r.ContentKind, r.Shebang, r.Runtime = prev.Digest, prev.Size, prev.ContentKind, prev.Shebang, prev.Runtime
			r.Stat = key
			return true
		}
	}
	if j.cached != nil && statNumsOf(&st) == j.cached.st {
		j.cached.reuseIn(r)
		return true
	}
	return false
}

// reuseIn gives r the digest, sniff and fingerprint the entry recorded.
func (e *fileEntry) reuseIn(r *Resource) {
	r.Digest, r.Size, r.ContentKind, r.Shebang, r.Runtime = e.digest, e.size, e.contentKind, e.shebang, e.runtime
	r.Stat = e.stat
	if r.Stat == "" {
		r.Stat = e.st.String()
	}
}

// racyMargin is how much older than the earlier scan's start a file's
// modification and change times must be for its earlier digest to be
// reused. File system times are coarser than the clock (a jiffy on ext4,
// two seconds on FAT), so a file changed twice within one tick, its size
// kept, keeps its fingerprint: one changed again just after the earlier
// scan read it would pass as unchanged. Its times are at least the scan
// start less one tick, so anything that new is read again.
const racyMargin = 2 * time.Second

// previousDigests indexes the reusable records of an earlier snapshot,
// and the bound its files' times must be below (racyMargin).
func previousDigests(reg *Registry) (map[string]*Resource, int64) {
	if reg == nil || reg.scanStart.IsZero() {
		return nil, 0
	}
	m := map[string]*Resource{}
	for i := range reg.Skills {
		for j := range reg.Skills[i].Resources {
			r := &reg.Skills[i].Resources[j]
			if len(r.Diagnostics) == 0 {
				m[r.HostPath] = r
			}
		}
	}
	return m, reg.scanStart.Add(-racyMargin).UnixNano()
}

func (d *digester) wait() error {
	close(d.ch)
	d.wg.Wait()
	return d.ctx.Err()
}

func digestResource(j digestJob, buf []byte, h *blake3.Hasher) {
	r := j.res
	fail := func(code, format string, args ...any) {
		r.Diagnostics = append(r.Diagnostics, Diagnostic{Severity: SeverityWarning, Code: code, Detail: fmt.Sprintf(format, args...), Path: r.HostPath})
		r.ContentKind = "binary"
	}
	// Raw file descriptors: an os.File per resource would register each
	// one with the runtime poller and a finalizer, which costs more than
	// hashing a small file.
	fd, err := openBeneathFD(j.root, j.rel)
	closeFD := func() { unix.Close(fd) }
	if errors.Is(err, errNoOpenat2) {
		var f *os.File
		if f, err = openNoBlock(j.root.fs, j.rel); err == nil {
			fd, closeFD = int(f.Fd()), func() { f.Close() }
		}
	}
	if err != nil {
		fail(CodeResourceUnreadable, "cannot open: %v", err)
		return
	}
	defer closeFD()
	if _, code, detail := readDigest(fd, r, buf, h, -1); code != "" {
		fail(code, "%s", detail)
	}
}

// readDigest reads the open file fd to its end into r: digest, size,
// content kind, stat fingerprint and, for a script, shebang and runtime.
// r changes only when done; otherwise code and detail say why, or, both
// empty, the file is larger than max (when max >= 0) and was not read.
func readDigest(fd int, r *Resource, buf []byte, h *blake3.Hasher, max int64) (done bool, code, detail string) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return false, CodeResourceNotRegular, "no longer a regular file; skipped"
	}
	if max >= 0 && st.Size > max {
		return false, "", ""
	}
	out := *r
	h.Reset()
	var size int64
	first := true
	out.ContentKind = "text"
	for {
		n, err := unix.Read(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return false, CodeResourceUnreadable, fmt.Sprintf("read: %v", err)
		}
		if n == 0 {
			break
		}
		if first {
			// Sniff the first chunk in place: copying it per file would
			// allocate more than the whole registry holds.
			head := buf[:min(n, sniffLen)]
			if isBinary(head, st.Size > int64(len(head))) {
				out.ContentKind = "binary"
			}
			if out.Kind == KindScript {
				out.Shebang = shebang(head)
				out.Runtime = runtimeOf(out.Shebang, out.Path)
			}
			first = false
		}
		h.Write(buf[:n])
		size += int64(n)
		if atEOF(n, len(buf), size, st.Size) {
			break
		}
	}
	var sum [32]byte
	out.Digest = artifacts.Digest(hex.AppendEncode([]byte("blake3:"), h.Sum(sum[:0])))
	out.Size = size
	if size == st.Size {
		out.Stat = statKey(&st)
	}
	if out.Kind == KindScript && out.Runtime == "" {
		out.Runtime = runtimeOf("", out.Path) // an empty script
	}
	*r = out
	return true, "", ""
}

// shebang returns the first line when it starts with "#!", bounded.
func shebang(head []byte) string {
	if !bytes.HasPrefix(head, []byte("#!")) {
		return ""
	}
	l, _, _ := bytes.Cut(head, []byte("\n"))
	l = bytes.TrimRight(l, "\r \t")
	if len(l) > 256 {
		l = l[:256]
	}
	return string(l)
}

// runtimeOf infers how a script runs: from its shebang first, then from
// its extension.
func runtimeOf(shebang, rel string) string {
	if shebang != "" {
		fields := strings.Fields(strings.TrimPrefix(shebang, "#!"))
		for i, f := range fields {
			base := path.Base(f)
			if i == 0 && base == "env" {
				continue
			}
			if strings.HasPrefix(f, "-") {
				continue
			}
			switch {
			case base == "deno":
				return "deno"
			case base == "bash":
				return "bash"
			case base == "sh" || base == "dash":
				return "sh"
			case base == "python" || strings.HasPrefix(base, "python3"):
				return "python"
			case base == "node" || base == "nodejs":
				return "node"
			}
			return "unknown"
		}
		return "unknown"
	}
	switch path.Ext(rel) {
	case ".ts", ".tsx", ".mts":
		return "deno"
	case ".js", ".mjs", ".cjs":
		return "node"
	case ".sh", ".bash":
		return "bash"
	case ".py":
		return "python"
	case ".wasm":
		return "wasm"
	}
	return "unknown"
}

// Version is the digest that names this version of the skill: SKILL.md
// and every resource (Digest covers SKILL.md, TreeDigest the resources).
func (s *Skill) Version() artifacts.Digest {
	h := artifacts.NewHasher()
	h.WriteField("harness.skill-version/1")
	h.WriteField(string(s.Digest))
	h.WriteField(string(s.TreeDigest))
	return h.Digest()
}
