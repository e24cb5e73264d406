package skills

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zeebo/blake3"
	"golang.org/x/sys/unix"

	"github.com/harness-dev/harness/artifacts"
)

// listResources walks a skill's directory (bounded, byte-wise order) and
// returns its files without digests; the scan's digester fills those in.
// Each directory is listed beneath the root's descriptor, as its files
// are read.
func (sc *scanner) listResources(c candidate, s *Skill) ([]Resource, []Diagnostic, walkInfo) {
	var rs []Resource
	var w walkInfo
	var ds []Diagnostic
	add := func(code, sev, p, format string, args ...any) {
		ds = append(ds, Diagnostic{Severity: sev, Code: code, Detail: fmt.Sprintf(format, args...), Path: p})
	}
	depthNoted, full := false, false
	visited := map[string]bool{}
	var walk func(dir, rel string, depth int)
	walk = func(dir, rel string, depth int) {
		w.dirs = append(w.dirs, dir)
		entries, err := sc.dirs.listBeneath(c.root, relTo(c.root.path, dir), dir)
		if err != nil {
			add(CodeResourceUnreadable, SeverityWarning, dir, "cannot list directory: %v", err)
			w.uncacheable = true // what failed may not fail next time
			return
		}
		for _, e := range entries {
			if full {
				return
			}
			name := e.Name()
			p := filepath.Join(dir, name)
			r := name
			if rel != "" {
				r = rel + "/" + name
			}
			if depth == 0 && name == "SKILL.md" {
				continue
			}
			if e.Type()&fs.ModeSymlink != 0 {
				w.uncacheable = true // a link's target moves without a fingerprint moving
			}
			if e.IsDir() || e.Type()&fs.ModeSymlink != 0 {
				isDir, d := followDir(c.root, visited, p, e, CodeResourceOutsideRoot)
				if d != nil {
					ds = append(ds, *d)
					continue
				}
				if isDir {
					if strings.HasPrefix(name, ".") || name == "node_modules" {
						continue
					}
					if depth+1 > sc.limits.ResourceDepth {
						if !depthNoted {
							add(CodeScanLimitReached, SeverityWarning, p, "resource depth limit (%d) reached; files below are not indexed (raise --max-resource-depth)", sc.limits.ResourceDepth)
							depthNoted = true
						}
						continue
					}
					walk(p, r, depth+1)
					continue
				}
			}
			// A plain regular file needs no stat here: the digest pass
			// measures it. Symlinks and special files are checked now.
			mode := e.Type()
			if mode&fs.ModeSymlink != 0 || !mode.IsRegular() || resourceKind(r) == KindScript {
				// Relative to the root's descriptor, as the listing was
				// made; a link is followed, as before, and its file is
				// read beneath the root or not at all.
				var st unix.Stat_t
				if err := unix.Fstatat(c.root.dirfd, relTo(c.root.path, p), &st, 0); err != nil {
					add(CodeResourceUnreadable, SeverityWarning, p, "cannot stat: %v", &fs.PathError{Op: "stat", Path: p, Err: err})
					w.uncacheable = true
					continue
				}
				mode = fileInfoMode(st.Mode) | fs.FileMode(st.Mode&0o777)
			}
			if !mode.IsRegular() {
				add(CodeResourceNotRegular, SeverityWarning, p, "not a regular file (%s); skipped and never opened", mode.Type())
				continue
			}
			if len(rs) >= sc.limits.ResourceFiles {
				add(CodeScanLimitReached, SeverityWarning, p, "resource file limit (%d) reached; the rest of the skill is not indexed (raise --max-resources)", sc.limits.ResourceFiles)
				full = true
				return
			}
			res := Resource{
				Path:        r,
				Kind:        resourceKind(r),
				HostPath:    p,
				SandboxPath: sc.sandbox(p),
				Diagnostics: []Diagnostic{},
			}
			if res.Kind == KindScript {
				x := mode&0o111 != 0
				res.Executable = &x
			}
			if path.Base(r) == "SKILL.md" {
				res.Diagnostics = append(res.Diagnostics, Diagnostic{Severity: SeverityInfo, Code: CodeNestedSkillIgnored, Detail: fmt.Sprintf("%s is inside skill '%s'; it is indexed as a resource of that skill, not loaded as a skill", r, s.Name), Path: p})
			}
			rs = append(rs, res)
		}
	}
	walk(c.dir, "", 0)
	slices.SortFunc(rs, func(a, b Resource) int { return strings.Compare(a.Path, b.Path) })
	if rs == nil {
		rs = []Resource{}
	}
	return rs, ds, w
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

// add queues every resource of s. The slice must not change until wait.
func (d *digester) add(s *Skill) {
	for i := range s.Resources {
		d.ch <- d.job(s, i)
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
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		fail(CodeResourceNotRegular, "no longer a regular file; skipped")
		return
	}
	h.Reset()
	var size int64
	first := true
	r.ContentKind = "text"
	for {
		n, err := unix.Read(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			fail(CodeResourceUnreadable, "read: %v", err)
			return
		}
		if n == 0 {
			break
		}
		if first {
			// Sniff the first chunk in place: copying it per file would
			// allocate more than the whole registry holds.
			head := buf[:min(n, sniffLen)]
			if isBinary(head, st.Size > int64(len(head))) {
				r.ContentKind = "binary"
			}
			if r.Kind == KindScript {
				r.Shebang = shebang(head)
				r.Runtime = runtimeOf(r.Shebang, r.Path)
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
	r.Digest = artifacts.Digest(hex.AppendEncode([]byte("blake3:"), h.Sum(sum[:0])))
	r.Size = size
	if size == st.Size {
		r.Stat = statKey(&st)
	}
	if r.Kind == KindScript && r.Runtime == "" {
		r.Runtime = runtimeOf("", r.Path) // an empty script
	}
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

// finishSkill runs what needs the digests: the tree digest and the
// diagnostic order. It drops the in-memory fields a snapshot must not keep.
func (sc *scanner) finishSkill(s *Skill) {
	// A tree digest the snapshot cache vouched for (cachedTree) is kept.
	if s.TreeDigest == "" {
		h, _ := sc.hashers.Get().(*artifacts.Hasher)
		if h == nil {
			h = artifacts.NewHasherSize(16 << 10)
		}
		s.TreeDigest = treeDigest(h, s.Resources)
		sc.hashers.Put(h)
	}
	s.Diagnostics = sortDiagnostics(s.Diagnostics)
	s.body, s.fsRoot, s.walked = nil, nil, nil
}
