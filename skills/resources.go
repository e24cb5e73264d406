package skills

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/zeebo/blake3"

	"github.com/harness-dev/harness/artifacts"
)

// listResources walks a skill's directory (bounded, byte-wise order) and
// returns its files without digests; digestAll fills those in.
func (sc *scanner) listResources(c candidate, s *Skill) ([]Resource, []Diagnostic) {
	var rs []Resource
	var ds []Diagnostic
	add := func(code, sev, p, format string, args ...any) {
		ds = append(ds, Diagnostic{Severity: sev, Code: code, Detail: fmt.Sprintf(format, args...), Path: p})
	}
	depthNoted, full := false, false
	var walk func(dir, rel string, depth int)
	walk = func(dir, rel string, depth int) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			add(CodeResourceUnreadable, SeverityWarning, dir, "cannot list directory: %v", err)
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
			if e.IsDir() || e.Type()&fs.ModeSymlink != 0 {
				isDir, ok := sc.followDir(c.root, p, e, CodeResourceOutsideRoot)
				if !ok {
					// followDir records its own diagnostic at scanner level;
					// move it onto the skill, where a reviewer looks.
					if n := len(sc.diags); n > 0 && sc.diags[n-1].Path == p {
						ds = append(ds, sc.diags[n-1])
						sc.diags = sc.diags[:n-1]
					}
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
			fi, err := os.Stat(p)
			if err != nil {
				add(CodeResourceUnreadable, SeverityWarning, p, "cannot stat: %v", err)
				continue
			}
			if !fi.Mode().IsRegular() {
				add(CodeResourceNotRegular, SeverityWarning, p, "not a regular file (%s); skipped and never opened", fi.Mode().Type())
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
				Size:        fi.Size(),
				Diagnostics: []Diagnostic{},
			}
			if res.Kind == KindScript {
				x := fi.Mode()&0o111 != 0
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
	return rs, ds
}

type digestJob struct {
	root *os.Root
	rel  string // path relative to the root
	res  *Resource
}

// digestAll digests every resource of every skill with a worker pool
// sized to the CPUs. Each file is read once, streamed: size, digest and
// the content sniff come from the same pass. Results land in place, so the
// outcome does not depend on scheduling.
func (sc *scanner) digestAll(ctx context.Context, ss []*Skill) error {
	var jobs []digestJob
	for _, s := range ss {
		for i := range s.Resources {
			r := &s.Resources[i]
			jobs = append(jobs, digestJob{root: s.fsRoot.fs, rel: relTo(s.fsRoot.path, r.HostPath), res: r})
		}
	}
	workers := min(runtime.GOMAXPROCS(0), max(len(jobs), 1))
	ch := make(chan *digestJob)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 256<<10)
			h := blake3.New()
			for j := range ch {
				digestResource(j, buf, h)
			}
		}()
	}
	var err error
	for i := range jobs {
		if err = ctx.Err(); err != nil {
			break
		}
		ch <- &jobs[i]
	}
	close(ch)
	wg.Wait()
	return err
}

func digestResource(j *digestJob, buf []byte, h *blake3.Hasher) {
	r := j.res
	fail := func(code, format string, args ...any) {
		r.Diagnostics = append(r.Diagnostics, Diagnostic{Severity: SeverityWarning, Code: code, Detail: fmt.Sprintf(format, args...), Path: r.HostPath})
		r.ContentKind = "binary"
	}
	f, err := openNoBlock(j.root, j.rel)
	if err != nil {
		fail(CodeResourceUnreadable, "cannot open: %v", err)
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		fail(CodeResourceNotRegular, "no longer a regular file; skipped")
		return
	}
	h.Reset()
	var size int64
	var head []byte
	for {
		n, err := f.Read(buf)
		if n > 0 {
			if head == nil {
				head = bytes.Clone(buf[:min(n, sniffLen)])
			}
			h.Write(buf[:n])
			size += int64(n)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			fail(CodeResourceUnreadable, "read: %v", err)
			return
		}
	}
	var sum [32]byte
	r.Digest = artifacts.Digest("blake3:" + fmt.Sprintf("%x", h.Sum(sum[:0])))
	r.Size = size
	r.ContentKind = "text"
	if isBinary(head, size > int64(len(head))) {
		r.ContentKind = "binary"
	}
	if r.Kind == KindScript {
		r.Shebang = shebang(head)
		r.Runtime = runtimeOf(r.Shebang, r.Path)
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
	}
	return "unknown"
}

// finishSkill runs what needs the digests: link checks, the tree digest,
// diagnostic order. It drops the in-memory fields a snapshot must not keep.
func (sc *scanner) finishSkill(s *Skill) {
	s.Diagnostics = append(s.Diagnostics, checkLinks(s)...)
	s.TreeDigest = treeDigest(s.Resources)
	s.Diagnostics = sortDiagnostics(s.Diagnostics)
	s.body, s.fsRoot = nil, nil
}
