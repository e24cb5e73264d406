package skills

// Loading: reading and checking each candidate's SKILL.md and listing its
// resources, on a worker pool, or taking it from the snapshot cache.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/zeebo/blake3"
	"golang.org/x/sys/unix"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/skills/snapcache"
)

// load reads and checks one candidate's SKILL.md and lists its resources
// into *into, which it returns. ok is false when the skill must be
// skipped; diags then say why.
func (sc *scanner) load(c candidate, strict bool, into *Skill, inline *inlineDigest) (s *Skill, diags []Diagnostic, ok bool) {
	skillPath := filepath.Join(c.dir, "SKILL.md")
	errd := func(code, msg string, line int) (*Skill, []Diagnostic, bool) {
		return nil, append(diags, Diagnostic{Severity: SeverityError, Code: code, Detail: msg, Path: skillPath, Line: line}), false
	}
	// The skill's directory is opened once; SKILL.md, the listing and the
	// files below are reached from it. When it cannot be opened (-1) each
	// is opened beneath the root instead, which then says why.
	dirfd, err := openDirBeneathFD(c.root, relTo(c.root.path, c.dir))
	if err != nil {
		dirfd = -1
	} else {
		defer unix.Close(dirfd)
	}
	// openat2 with RESOLVE_BENEATH refuses a SKILL.md that resolves
	// outside the root, so no separate symlink walk is needed.
	data, err := readIn(c.root, dirfd, "SKILL.md", relTo(c.root.path, skillPath), maxSkillFile)
	if err != nil {
		switch {
		case escapes(err):
			target := "a path"
			if real, err := filepath.EvalSymlinks(skillPath); err == nil {
				target = real
			}
			return errd(CodeSkillOutsideRoot, fmt.Sprintf("SKILL.md resolves to %s, outside the skills root %s; the skill is ignored (validate or declare a root that holds both the link and its target, or replace the link with the file)", target, c.root.path), 0)
		case errors.Is(err, errTooLarge):
			return errd(CodeSkillFileTooLarge, fmt.Sprintf("SKILL.md is larger than %d bytes; move detail into references/", maxSkillFile), 0)
		}
		return errd(CodeSkillFileUnreadable, fmt.Sprintf("cannot read SKILL.md: %v", err), 0)
	}
	if isBinary(data, false) {
		return errd(CodeSkillFileBinary, "SKILL.md is not UTF-8 text (it holds a NUL byte or invalid UTF-8)", 0)
	}
	if bytes.HasPrefix(data, bom) {
		diags = append(diags, Diagnostic{Severity: SeverityWarning, Code: CodeByteOrderMark, Detail: "SKILL.md starts with a UTF-8 byte-order mark; harness skips it, but other clients may not find the frontmatter: save the file without it", Path: skillPath, Line: 1})
	}
	fmRaw, yamlLine, body, bodyOffset, err := splitFrontmatter(data)
	if err != nil {
		fe := err.(*frontmatterError)
		return errd(fe.Code, fe.Msg, fe.Line)
	}
	fm, err := parseFrontmatter(fmRaw, yamlLine)
	if err != nil {
		fe := err.(*frontmatterError)
		return errd(fe.Code, fe.Msg, fe.Line)
	}
	dirName := filepath.Base(c.dir)
	desc, _ := fm["description"].(string)
	skipped := false
	if strings.TrimSpace(desc) == "" {
		if !sc.validating {
			return errd(CodeDescriptionMissing, "the frontmatter has no description: add 'description:' saying what the skill does and when to use it", 0)
		}
		diags = append(diags, Diagnostic{Severity: SeverityError, Code: CodeDescriptionMissing, Detail: "the frontmatter has no description: add 'description:' saying what the skill does and when to use it", Path: skillPath})
		skipped = true
	}
	name, isStr := fm["name"].(string)
	switch {
	case fm["name"] == nil && !strict:
		name = dirName
		diags = append(diags, Diagnostic{Severity: SeverityWarning, Code: CodeNameMissing, Detail: fmt.Sprintf("the frontmatter has no name; using the directory name '%s'", dirName), Path: skillPath})
	case fm["name"] == nil:
		name = dirName
	case !isStr || strings.TrimSpace(name) == "":
		name = dirName
		diags = append(diags, Diagnostic{Severity: SeverityWarning, Code: CodeNameInvalid, Detail: fmt.Sprintf("the frontmatter name is not a non-empty string; using the directory name '%s'", dirName), Path: skillPath})
	}
	diags = append(diags, checkFields(fm, name, dirName, skillPath, strict)...)
	s = into
	*s = Skill{
		Name:             name,
		Description:      desc,
		Root:             c.root.path,
		SkillPath:        skillPath,
		SkillDir:         c.dir,
		LinkedFrom:       c.link,
		SandboxSkillPath: sc.sandbox(skillPath),
		SandboxSkillDir:  sc.sandbox(c.dir),
		Digest:           artifacts.DigestBytes(data),
		Frontmatter:      fm,
		BodyOffset:       bodyOffset,
		Headings:         headings(body),
		rootIndex:        c.index,
		relDir:           c.rel,
		body:             body,
		bodyLine:         1 + bytes.Count(data[:bodyOffset], []byte{'\n'}),
		fsRoot:           c.root,
	}
	var w walkInfo
	s.Resources, s.Diagnostics, w = sc.listResources(c, s, dirfd, inline)
	s.walked = &w
	// Links are checked here, on the loading goroutine, rather than after
	// every skill is loaded: the check needs only the listed resources,
	// and a serial pass over tens of thousands of skills left a CPU idle.
	s.Diagnostics = append(s.Diagnostics, checkLinks(&sc.markdown, s)...)
	return s, diags, !skipped
}

var errTooLarge = errors.New("file too large")

// escapes reports whether an open failed because the path leads outside
// its root: EXDEV from openat2, or os.Root's own refusal.
func escapes(err error) bool {
	return errors.Is(err, unix.EXDEV) || strings.Contains(err.Error(), "path escapes from parent")
}

func relTo(base, p string) string {
	if rel, ok := below(base, p); ok {
		return rel
	}
	rel, err := filepath.Rel(base, p)
	if err != nil {
		return p
	}
	return rel
}

// below returns the rest of p after base and a slash when that rest is a
// clean relative path (no empty, "." or ".." element), which is then
// exactly what filepath.Rel returns, found without its allocations: every
// file of a scan asks for its path below the root.
func below(base, p string) (string, bool) {
	if !filepath.IsAbs(base) || len(p) <= len(base)+1 || p[len(base)] != '/' || p[:len(base)] != base {
		return "", false
	}
	rest := p[len(base)+1:]
	for elem := range strings.SplitSeq(rest, "/") {
		if elem == "" || elem == "." || elem == ".." {
			return "", false
		}
	}
	return rest, true
}

// isBinary is the content guess used everywhere: a NUL byte or invalid
// UTF-8 in the first 8 KiB. cut says b is a prefix of a longer file: a
// multi-byte rune split at the end then does not count as invalid.
func isBinary(b []byte, cut bool) bool {
	if len(b) > sniffLen {
		b, cut = b[:sniffLen], true
	}
	if cut {
		for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
			if utf8.RuneStart(b[i]) {
				if !utf8.FullRune(b[i:]) {
					b = b[:i]
				}
				break
			}
		}
	}
	if slices.Contains(b, 0) {
		return true
	}
	return !utf8.Valid(b)
}

const sniffLen = 8 << 10

type loadResult struct {
	skill *Skill
	diags []Diagnostic
	ok    bool
	// entry is the skill's snapshot-cache entry (nil when not caching or
	// not cacheable); reused says it came from the cache unchanged.
	entry  *skillEntry
	reused bool
	// settled says the snapshot cache has been consulted for every
	// resource: only jobs are left to digest.
	settled bool
	jobs    []digestJob
}

// loadAll loads candidates on a worker pool and yields the results in
// candidate order, so that what follows is independent of scheduling.
//
// Each candidate is loaded into its own element of into (as long as
// cands): one allocation for every skill of the scan, which the registry
// then keeps.
func (sc *scanner) loadAll(ctx context.Context, cands []candidate, into []Skill, dg *digester) iter.Seq[loadResult] {
	return func(yield func(loadResult) bool) {
		// Workers take the next candidate from a counter and say which one
		// they finished; results are yielded in candidate order as soon as
		// the next one is ready. (A channel per candidate cost an
		// allocation each, a handing-out goroutine a switch each.)
		results := make([]loadResult, len(cands))
		finished := make(chan int, len(cands)) // never blocks a worker
		var next atomic.Int64
		var quit atomic.Bool
		var wg sync.WaitGroup
		for range runtime.GOMAXPROCS(0) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var w loadWorker
				for !quit.Load() && ctx.Err() == nil {
					i := int(next.Add(1) - 1)
					if i >= len(cands) {
						return
					}
					results[i] = sc.loadCached(cands[i], &w, &into[i], dg)
					finished <- i
				}
			}()
		}
		defer wg.Wait()
		defer quit.Store(true)
		ready := make([]bool, len(cands))
		for want := 0; want < len(cands); {
			select {
			case i := <-finished:
				ready[i] = true
			case <-ctx.Done():
				return
			}
			for ; want < len(cands) && ready[want]; want++ {
				r := results[want]
				results[want] = loadResult{}
				if !yield(r) {
					return
				}
			}
		}
	}
}

// loadWorker is what one loading goroutine reuses from skill to skill.
type loadWorker struct {
	arena snapcache.Arena
	// files and matched hold one skill's snapshot-cache file entries
	// while its digests are settled.
	files   []fileEntry
	matched []*fileEntry
	digest  inlineDigest
}

// inline is the worker's inlineDigest, its buffer made on first use.
func (w *loadWorker) inline(read *atomic.Int64) *inlineDigest {
	if w.digest.buf == nil {
		w.digest = inlineDigest{buf: make([]byte, inlineMax), h: blake3.New(), read: read}
	}
	return &w.digest
}

// loadCached loads one candidate for a scan: from its snapshot-cache
// entry when every fingerprint is unchanged, else from disk (then making
// it an entry, when caching). With a cache, the digests its entries still
// vouch for are settled here, while the entries are at hand; jobs lists
// the resources left for the digest workers.
func (sc *scanner) loadCached(c candidate, w *loadWorker, into *Skill, dg *digester) loadResult {
	r, checked := sc.loadEntry(c, w, into, dg)
	if r.ok && sc.cache != nil {
		var tree artifacts.Digest
		w.files, tree = filesOf(sc.cache, r.skill.SkillDir, &w.arena, w.files[:0])
		w.matched = matchFiles(r.skill.SkillDir, w.files, r.skill.Resources, w.matched[:0])
		markChecked(c.root.path, r.skill.Resources, w.matched, checked)
		r.jobs, r.settled = dg.settle(r.skill, w.matched), true
		// Digests taken from an earlier scan in this process (a batch's)
		// are not those the recorded tree digest covers.
		r.skill.TreeDigest = cachedTree(tree, r.skill.Resources, w.files, w.matched, len(r.jobs) == 0 && len(dg.previous) == 0)
	}
	return r
}

// loadEntry loads c from its cache entry if it is still good (then also
// returning the fingerprints it checked), else from disk.
func (sc *scanner) loadEntry(c candidate, w *loadWorker, into *Skill, dg *digester) (loadResult, []pathStat) {
	if raw := sc.cache.Skill(c.dir); raw != nil {
		if s, d, checked, ok := sc.fromCache(c, raw, &w.arena, into); ok {
			return loadResult{skill: s, diags: d, ok: true, entry: &skillEntry{Dir: c.dir, Raw: raw}, reused: true}, checked
		}
	}
	// A file an earlier record may vouch for is stat'd by the digest
	// pass, not read here.
	var inline *inlineDigest
	if !sc.cache.Has(c.dir) && len(dg.previous) == 0 {
		inline = w.inline(&dg.read)
	}
	s, d, ok := sc.load(c, false, into, inline)
	r := loadResult{skill: s, diags: d, ok: ok}
	if ok && sc.caching {
		if e, ok := sc.skillEntryOf(c, s, d, *s.walked); ok {
			r.entry = &e
		}
	}
	return r, nil
}
