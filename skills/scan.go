package skills

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/skills/snapcache"
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
	// Previous is an earlier snapshot of the same roots, taken by Scan in
	// this process (a batch's shared snapshot): a file whose stat
	// fingerprint (inode, size, modification and change times) is
	// unchanged keeps its recorded digest instead of being read again,
	// unless the file is racily clean (see racyMargin). A registry decoded
	// from a file carries no scan start, so its digests are never reused.
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
	// Real time, not opts.Now: it is compared with file times.
	started := time.Now()
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
	var loading chan *snapcache.Index
	if opts.Cache != nil {
		loading = make(chan *snapcache.Index, 1)
		go func() { loading <- opts.Cache.Load() }()
	}
	var cands []candidate
	for _, r := range sc.roots {
		cs, err := sc.discover(ctx, r)
		if err != nil {
			return nil, err
		}
		if cands == nil {
			cands = cs
			continue
		}
		cands = append(cands, cs...)
	}
	cands = sc.dedupe(cands)
	if opts.Cache != nil {
		sc.cache, sc.caching = <-loading, true
	}
	// Listing and digesting overlap: each skill's files are queued for the
	// digest workers as soon as the skill is listed.
	dg := sc.startDigest(ctx)
	dg.previous, dg.previousBefore = previousDigests(opts.Previous)
	// Every skill is loaded into this one array, which the registry keeps
	// (compacted over the skipped ones): copying twenty thousand skills
	// out of separate allocations cost a pass and their memory twice.
	all := make([]Skill, len(cands))
	var loaded []*Skill
	var entries []skillEntry
	learned := false
	for res := range sc.loadAll(ctx, cands, all, dg) {
		if !res.ok {
			sc.diags = append(sc.diags, res.diags...)
			learned = learned || sc.caching
			continue
		}
		res.skill.Diagnostics = append(res.skill.Diagnostics, res.diags...)
		loaded = append(loaded, res.skill)
		if res.settled {
			dg.queue(res.jobs)
		} else {
			dg.add(res.skill)
		}
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
		scanStart:   started,
	}
	for _, r := range sc.roots {
		reg.Roots = append(reg.Roots, Root{Path: r.path, SandboxPath: sc.sandbox(r.path), External: r.external})
	}
	env := opts.Environment.withDefaults()
	reg.Eligibility = EligibilityContext{Path: nonEmpty(filepath.SplitList(env.Path)), OS: env.OS}
	// What the cache would keep is counted here, on all CPUs, to tell
	// whether it needs rewriting.
	var kept atomic.Int64
	parallelFor(0, len(loaded), func(i int) {
		sc.finishSkill(loaded[i])
		checkEligibility(loaded[i], env)
		if opts.Cache != nil {
			kept.Add(int64(keptCount(opts.Cache, loaded[i])))
		}
	})
	// loaded is in candidate order, so each skill moves only towards the
	// front, over a slot already moved or skipped.
	for i, s := range loaded {
		all[i] = *s
	}
	clear(all[len(loaded):])
	reg.Skills = all[:len(loaded)]
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
	if opts.Cache != nil && (learned || dg.read.Load() > 0 || kept.Load() != int64(sc.cache.Files) || len(entries) != sc.cache.Skills) {
		// Rewritten only when this scan learned something: every skill
		// taken from the cache, nothing read, and as many entries as
		// loaded means the file already holds exactly these. A cache
		// that cannot be written only costs the next scan time.
		saveCache(opts.Cache, reg, entries)
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
	dirs      dirLister
	hashers   sync.Pool // *artifacts.Hasher, for tree digests
	// cache is the snapshot cache as read (nil without one); caching
	// says new entries are wanted.
	cache   *snapcache.Index
	caching bool
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

func nonEmpty(xs []string) []string {
	out := []string{}
	for _, x := range xs {
		if x != "" {
			out = append(out, x)
		}
	}
	return out
}
