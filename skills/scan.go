package skills

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/harness-dev/harness/artifacts"
)

// maxSkillFile bounds SKILL.md: it is read whole and injected into a
// model's context, so a larger one is a mistake, not a skill.
const maxSkillFile = 1 << 20

// ScanOptions configure Scan. Zero Limits fields take DefaultLimits.
type ScanOptions struct {
	// Roots are absolute host paths in precedence order. A root outside
	// Workspace is external: the model sees it at /skills/<label>/...
	// (see ExternalLabels) instead of under the workspace.
	Roots []string
	// Workspace is the absolute host workspace; sandbox paths are
	// SandboxWorkspace joined with paths relative to it. Paths outside it
	// get no sandbox path.
	Workspace        string
	SandboxWorkspace string
	Limits           Limits
	// Now stamps generatedAt (nil = time.Now).
	Now func() time.Time
	// Environment is what skill requirements are checked against (zero:
	// this process's PATH, environment and OS).
	Environment Environment
	// Previous is an earlier snapshot of the same roots (a resume's drift
	// check): a file whose stat fingerprint (inode, size, modification
	// and change times) is unchanged keeps its recorded digest instead of
	// being read again.
	Previous *Registry
	// Cache, when set, is a persistent snapshot cache (see
	// OpenSnapshotCache): digests of unchanged files are taken from it,
	// and it is rewritten with this scan's. Performance only: the
	// registry is byte for byte what an uncached scan writes.
	Cache *SnapshotCache
}

// Scan snapshots the skill roots. It fails only for a root that cannot be
// scanned at all or when ctx ends; every problem inside a root is a
// Diagnostic in the registry.
func Scan(ctx context.Context, opts ScanOptions) (*Registry, error) {
	if len(opts.Roots) == 0 {
		return nil, errors.New("scan: no skill roots")
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	sc, err := newScanner(opts.Roots, opts.Workspace, opts.SandboxWorkspace, opts.Limits.withDefaults())
	if err != nil {
		return nil, err
	}
	defer sc.close()
	// The cache file is decoded while the roots are listed.
	var loading chan cached
	if opts.Cache != nil {
		loading = make(chan cached, 1)
		go func() { loading <- opts.Cache.load() }()
	}
	var cands []candidate
	for _, r := range sc.roots {
		cs, err := sc.discover(ctx, r)
		if err != nil {
			return nil, err
		}
		cands = append(cands, cs...)
	}
	cands = sc.dedupe(cands)
	var fromCache cached
	if opts.Cache != nil {
		fromCache = <-loading
		sc.cachedSkills, sc.caching = fromCache.skills, true
	}
	// Listing and digesting overlap: each skill's files are queued for the
	// digest workers as soon as the skill is listed.
	dg := sc.startDigest(ctx)
	dg.previous = previousDigests(opts.Previous)
	if opts.Cache != nil {
		merged := make(map[string]*Resource, len(fromCache.files)+len(dg.previous))
		maps.Copy(merged, fromCache.files)
		maps.Copy(merged, dg.previous)
		dg.previous = merged
	}
	var loaded []*Skill
	var entries []skillEntry
	learned := false
	for res := range sc.loadAll(ctx, cands) {
		if !res.ok {
			sc.diags = append(sc.diags, res.diags...)
			learned = learned || sc.caching
			continue
		}
		res.skill.Diagnostics = append(res.skill.Diagnostics, res.diags...)
		loaded = append(loaded, res.skill)
		dg.add(res.skill)
		if res.entry != nil {
			entries = append(entries, *res.entry)
		}
		learned = learned || !res.reused
	}
	if err := dg.wait(); err != nil {
		return nil, err
	}
	reg := &Registry{
		Envelope:    artifacts.NewEnvelope(RegistryType, RegistryVersion),
		GeneratedAt: now().UTC(),
		Limits:      sc.limits,
		Skills:      []Skill{},
	}
	for _, r := range sc.roots {
		reg.Roots = append(reg.Roots, Root{Path: r.path, SandboxPath: sc.sandbox(r.path), External: r.external})
	}
	env := opts.Environment.withDefaults()
	reg.Eligibility = EligibilityContext{Path: nonEmpty(filepath.SplitList(env.Path)), OS: env.OS}
	for _, s := range loaded {
		sc.finishSkill(s)
		checkEligibility(s, env)
		reg.Skills = append(reg.Skills, *s)
	}
	resolvePrecedence(reg.Skills)
	slices.SortStableFunc(reg.Skills, func(a, b Skill) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		if a.rootIndex != b.rootIndex {
			return a.rootIndex - b.rootIndex
		}
		return strings.Compare(a.SkillPath, b.SkillPath)
	})
	reg.Diagnostics = sortDiagnostics(sc.diags)
	reg.Digest = registryDigest(reg.Limits, reg.Skills)
	if opts.Cache != nil && (learned || dg.read.Load() > 0 || opts.Cache.entries(reg) != len(fromCache.files) || len(entries) != len(fromCache.skills)) {
		// Rewritten only when this scan learned something: every skill
		// taken from the cache, nothing read, and as many entries as
		// loaded means the file already holds exactly these. A cache
		// that cannot be written only costs the next scan time.
		opts.Cache.save(reg, entries)
	}
	return reg, nil
}

// resolvePrecedence marks every skill whose name an earlier one already
// took: earlier roots win, and within a root the byte-wise first SKILL.md
// path wins.
func resolvePrecedence(ss []Skill) {
	order := make([]int, len(ss))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if ss[a].rootIndex != ss[b].rootIndex {
			return ss[a].rootIndex - ss[b].rootIndex
		}
		return strings.Compare(ss[a].SkillPath, ss[b].SkillPath)
	})
	winner := map[string]int{}
	for _, i := range order {
		s := &ss[i]
		w, taken := winner[s.Name]
		if !taken {
			winner[s.Name] = i
			continue
		}
		s.ShadowedBy = ss[w].SkillPath
		d := Diagnostic{Severity: SeverityWarning, Path: s.SkillPath}
		if ss[w].rootIndex == s.rootIndex {
			d.Code = CodeDuplicateSkillName
			d.Detail = fmt.Sprintf("skill name '%s' is also defined by %s, which sorts first in the same root and wins; rename one of them", s.Name, ss[w].SkillPath)
		} else {
			d.Code = CodeSkillShadowed
			d.Detail = fmt.Sprintf("skill '%s' is shadowed by %s from an earlier --skills-root", s.Name, ss[w].SkillPath)
		}
		s.Diagnostics = append(s.Diagnostics, d)
	}
}

func sortDiagnostics(ds []Diagnostic) []Diagnostic {
	if ds == nil {
		return []Diagnostic{}
	}
	slices.SortStableFunc(ds, func(a, b Diagnostic) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return strings.Compare(a.Code, b.Code)
	})
	return ds
}

type scanRoot struct {
	index int
	path  string // absolute, symlinks resolved
	fs    *os.Root
	dir   *os.File // the root directory, for openat2 beneath it
	dirfd int
	// external roots lie outside the workspace; sandboxBase is where the
	// model sees them (/skills/<label>).
	external    bool
	sandboxBase string
}

type scanner struct {
	roots []*scanRoot
	// linkRoots are opened at the canonical directory of a linked skill
	// that no declared root holds, keyed by that directory.
	linkRoots map[string]*scanRoot
	workspace string
	sandboxWS string
	limits    Limits
	diags     []Diagnostic
	markdown  markdownParsers
	// cachedSkills are the snapshot cache's skill entries by directory;
	// caching says new entries are wanted.
	cachedSkills map[string]*skillEntry
	caching      bool
	// validating keeps checking a skill past a problem that makes a run
	// skip it, so an author sees every problem at once.
	validating bool
}

func newScanner(roots []string, workspace, sandboxWS string, limits Limits) (*scanner, error) {
	sc := &scanner{workspace: workspace, sandboxWS: sandboxWS, limits: limits}
	for _, r := range roots {
		sr, err := openScanRoot(r)
		if err != nil {
			sc.close()
			return nil, err
		}
		sr.index = len(sc.roots)
		sc.roots = append(sc.roots, sr)
	}
	sc.markExternal()
	return sc, nil
}

func openScanRoot(r string) (*scanRoot, error) {
	abs, err := filepath.Abs(r)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return nil, fmt.Errorf("skills root %s: %w", r, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("skills root %s: %w", r, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("skills root %s is not a directory", r)
	}
	rfs, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("skills root %s: %w", r, err)
	}
	dir, err := os.Open(abs)
	if err != nil {
		rfs.Close()
		return nil, fmt.Errorf("skills root %s: %w", r, err)
	}
	return &scanRoot{path: abs, fs: rfs, dir: dir, dirfd: int(dir.Fd())}, nil
}

func (sc *scanner) close() {
	for _, r := range sc.roots {
		r.fs.Close()
		r.dir.Close()
	}
	for _, r := range sc.linkRoots {
		r.fs.Close()
		r.dir.Close()
	}
}

// sandbox maps a host path to the path the model sees, or "" when the
// path is neither inside the workspace nor inside an external root.
func (sc *scanner) sandbox(host string) string {
	for _, r := range sc.roots {
		if r.external && within(r.path, host) {
			rel, _ := filepath.Rel(r.path, host)
			return path.Join(r.sandboxBase, filepath.ToSlash(rel))
		}
	}
	if sc.workspace == "" || sc.sandboxWS == "" {
		return ""
	}
	rel, err := filepath.Rel(sc.workspace, host)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return ""
	}
	if rel == "." {
		return sc.sandboxWS
	}
	return path.Join(sc.sandboxWS, filepath.ToSlash(rel))
}

func within(base, p string) bool {
	return p == base || strings.HasPrefix(p, base+string(filepath.Separator))
}

func (sc *scanner) diag(sev, code, p, format string, args ...any) {
	sc.diags = append(sc.diags, Diagnostic{Severity: sev, Code: code, Detail: fmt.Sprintf(format, args...), Path: p})
}

// load reads and checks one candidate's SKILL.md and lists its resources.
// ok is false when the skill must be skipped; diags then say why.
func (sc *scanner) load(c candidate, strict bool) (s *Skill, diags []Diagnostic, ok bool) {
	skillPath := filepath.Join(c.dir, "SKILL.md")
	errd := func(code, msg string, line int) (*Skill, []Diagnostic, bool) {
		return nil, append(diags, Diagnostic{Severity: SeverityError, Code: code, Detail: msg, Path: skillPath, Line: line}), false
	}
	// openat2 with RESOLVE_BENEATH refuses a SKILL.md that resolves
	// outside the root, so no separate symlink walk is needed.
	data, err := readRegular(c.root, relTo(c.root.path, skillPath), maxSkillFile)
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
	s = &Skill{
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
		bodyLine:         1 + strings.Count(string(data[:bodyOffset]), "\n"),
		fsRoot:           c.root,
	}
	var w walkInfo
	s.Resources, s.Diagnostics, w = sc.listResources(c, s)
	s.walked = &w
	// Links are checked here, on the loading goroutine, rather than after
	// every skill is loaded: the check needs only the listed resources,
	// and a serial pass over tens of thousands of skills left a CPU idle.
	md := sc.markdown.get()
	s.Diagnostics = append(s.Diagnostics, checkLinks(md, s)...)
	sc.markdown.put(md)
	return s, diags, !skipped
}

var errTooLarge = errors.New("file too large")

// escapes reports whether an open failed because the path leads outside
// its root: EXDEV from openat2, or os.Root's own refusal.
func escapes(err error) bool {
	return errors.Is(err, unix.EXDEV) || strings.Contains(err.Error(), "path escapes from parent")
}

func relTo(base, p string) string {
	rel, err := filepath.Rel(base, p)
	if err != nil {
		return p
	}
	return rel
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
}

// loadAll loads candidates on a worker pool and yields the results in
// candidate order, so that what follows is independent of scheduling.
func (sc *scanner) loadAll(ctx context.Context, cands []candidate) iter.Seq[loadResult] {
	return func(yield func(loadResult) bool) {
		results := make([]chan loadResult, len(cands))
		for i := range results {
			results[i] = make(chan loadResult, 1)
		}
		next := make(chan int)
		var wg sync.WaitGroup
		for range runtime.GOMAXPROCS(0) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					results[i] <- sc.loadCached(cands[i])
				}
			}()
		}
		go func() {
			defer close(next)
			for i := range cands {
				if ctx.Err() != nil {
					return
				}
				next <- i
			}
		}()
		defer wg.Wait()
		for i := range results {
			select {
			case r := <-results[i]:
				if !yield(r) {
					go func() {
						for range next {
						}
					}()
					return
				}
			case <-ctx.Done():
				go func() {
					for range next {
					}
				}()
				return
			}
		}
	}
}

// loadCached loads one candidate for a scan: from its snapshot-cache
// entry when every fingerprint is unchanged, else from disk (then making
// it an entry, when caching).
func (sc *scanner) loadCached(c candidate) loadResult {
	if e, ok := sc.cachedSkills[c.dir]; ok {
		if s, d, ok := sc.fromCache(c, e); ok {
			return loadResult{skill: s, diags: d, ok: true, entry: e, reused: true}
		}
	}
	s, d, ok := sc.load(c, false)
	r := loadResult{skill: s, diags: d, ok: ok}
	if ok && sc.caching {
		if e, ok := sc.skillEntryOf(c, s, d, *s.walked); ok {
			r.entry = &e
		}
	}
	return r
}

func nonEmpty(xs []string) []string {
	out := []string{}
	for _, x := range xs {
		if x != "" {
			out = append(out, x)
		}
	}
	return out
}
