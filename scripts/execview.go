package scripts

import (
	"debug/elf"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
)

// What a script limited to some programs sees of the system. The execute
// right alone does not make such a limit: the dynamic loader, which the
// runtime needs, maps any ELF file it can open (mmap PROT_EXEC is not
// execve), so "ld.so /usr/bin/anything" would run every program the
// script can read. The script is therefore shown only the programs it
// may run, the loaders and shared libraries they need, and what its
// interpreter reads at run time; every other program is not there
// (bwrap) or cannot be opened (Landlock).

// execView is the computed view: host paths, each shown at the same path
// in the sandbox.
type execView struct {
	// files are regular files shown one by one; dirs are directories
	// shown whole. Both are real paths (no link on the way).
	files, dirs []string
	// links are the symbolic links met on the way to a file or
	// directory, which the sandbox needs to reach it by the name the
	// loader or the runtime uses (libfoo.so.1 -> libfoo.so.1.2.3).
	links []viewLink
	// exec is what the execute layer allows: the programs (runtime,
	// declared programs, their loaders and #! interpreters) and the
	// declared directories of programs.
	exec []string
}

type viewLink struct{ path, target string }

// topLinks are the top-level links every sandbox already has (/bin ->
// usr/bin on a merged-/usr system): bwrapBase makes them.
var topLinks = []string{"/bin", "/sbin", "/lib", "/lib64", "/lib32"}

// dataDirs are read at run time by the C library and common runtimes and
// hold no programs: time zones (/etc/localtime leads there), locales,
// character set converters, the certificates /etc/ssl links to.
var dataDirs = []string{
	"/usr/share/zoneinfo", "/usr/lib/locale", "/usr/share/locale", "/usr/share/ca-certificates",
	"/usr/lib/ssl", "/usr/share/terminfo", "/usr/lib/terminfo",
}

// maxDirEntries bounds the walk of a declared directory of programs: past
// it the directory is still shown whole, but the libraries of what lies
// deeper are not looked for (a program among them that needs a library
// no other program needs would fail to start, visibly).
const maxDirEntries = 50000

// viewCache keeps computed views per harness process: the same runtime
// and programs are asked for at every call of a run. An entry is used
// again only while each root it started from, and the loader's cache,
// is the same file. It is
// emptied when it reaches maxCachedViews: a runtime copied per call (one
// under a private directory, as root) makes a new key every time.
var viewCache = struct {
	sync.Mutex
	views map[string]*cachedView
}{views: map[string]*cachedView{}}

const maxCachedViews = 64

type cachedView struct {
	roots []rootStamp
	view  *execView
}

type rootStamp struct {
	path        string
	ino, mtime  int64
	size, ctime int64
}

func stampOf(p string) rootStamp {
	var st syscall.Stat_t
	if syscall.Stat(p, &st) != nil {
		return rootStamp{path: p}
	}
	return rootStamp{path: p, ino: int64(st.Ino), size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}
}

// viewFor is the view for runtime (a host path), the programs in allowed
// (names looked up on path, or absolute host paths of programs or of
// directories of programs) and the libraries helper needs (the harness
// binary bound into the sandbox; "" for none).
func viewFor(runtime string, allowed []string, path, helper string) *execView {
	key := strings.Join(append([]string{runtime, path, helper}, allowed...), "\x00")
	// The loader cache too: ldconfig rewrites it when a library is
	// installed or upgraded, which may move a library the view names.
	roots := []string{runtime, helper, "/etc/ld.so.cache"}
	for _, a := range allowed {
		if filepath.IsAbs(a) {
			roots = append(roots, a)
		} else if p, err := LookupBinary(a, path); err == nil {
			roots = append(roots, p)
		}
	}
	var stamps []rootStamp
	for _, r := range roots {
		if r != "" {
			stamps = append(stamps, stampOf(r))
		}
	}
	viewCache.Lock()
	c, ok := viewCache.views[key]
	viewCache.Unlock()
	if ok && slices.Equal(c.roots, stamps) {
		return c.view
	}
	b := newViewBuilder()
	b.program(runtime, true)
	b.runtimeNeeds(runtime)
	for _, a := range allowed {
		switch {
		case !filepath.IsAbs(a):
			if p, err := LookupBinary(a, path); err == nil {
				b.program(p, true)
				b.runtimeNeeds(p)
			}
		default:
			if fi, err := os.Stat(a); err == nil && fi.IsDir() {
				b.programDir(a)
			} else if err == nil {
				b.program(a, true)
				b.runtimeNeeds(a)
			}
		}
	}
	b.namesOnPath(path)
	if helper != "" {
		b.librariesOf(helper)
	}
	for _, d := range dataDirs {
		b.dir(d)
	}
	v := b.finish()
	viewCache.Lock()
	if len(viewCache.views) >= maxCachedViews {
		clear(viewCache.views)
	}
	viewCache.views[key] = &cachedView{roots: stamps, view: v}
	viewCache.Unlock()
	return v
}

// viewBuilder collects a view; every path it is given is resolved link
// by link as the kernel would.
type viewBuilder struct {
	files, dirs map[string]bool
	links       map[string]string
	exec        []string
	// seen are the files whose dependencies were added: 1 as a
	// library, 2 as a program (its interpreter then gets the execute
	// right too).
	seen   map[string]int
	search []string // library directories, in the loader's order
	cache  map[string][]string
}

func newViewBuilder() *viewBuilder {
	b := &viewBuilder{files: map[string]bool{}, dirs: map[string]bool{}, links: map[string]string{}, seen: map[string]int{}}
	b.search = librarySearchPath()
	b.cache = readLdCache("/etc/ld.so.cache")
	return b
}

// resolve follows every link on the way to p, recording each (except the
// top-level ones every sandbox has), and returns the real path.
func (b *viewBuilder) resolve(p string) (string, bool) {
	rest := strings.Split(strings.Trim(filepath.Clean(p), "/"), "/")
	cur := "/"
	for hops := 0; len(rest) > 0; {
		c := rest[0]
		rest = rest[1:]
		if c == "" || c == "." {
			continue
		}
		if c == ".." {
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		fi, err := os.Lstat(next)
		if err != nil {
			return "", false
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if hops++; hops > 40 {
			return "", false
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", false
		}
		if !slices.Contains(topLinks, next) {
			b.links[next] = target
		}
		if filepath.IsAbs(target) {
			cur = "/"
		}
		rest = append(strings.Split(strings.Trim(target, "/"), "/"), rest...)
	}
	return cur, true
}

// file shows the file at p; it returns its real path.
func (b *viewBuilder) file(p string) (string, bool) {
	real, ok := b.resolve(p)
	if !ok {
		return "", false
	}
	fi, err := os.Stat(real)
	if err != nil || !fi.Mode().IsRegular() {
		return "", false
	}
	b.files[real] = true
	return real, true
}

// dir shows the directory at p whole.
func (b *viewBuilder) dir(p string) (string, bool) {
	real, ok := b.resolve(p)
	if !ok {
		return "", false
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return "", false
	}
	b.dirs[real] = true
	return real, true
}

// program shows the program at p with what starting it loads: its ELF
// interpreter and shared libraries, or its #! interpreter; executable
// says it may be executed (it and its loader get the execute right).
func (b *viewBuilder) program(p string, executable bool) {
	real, ok := b.file(p)
	if !ok {
		return
	}
	if executable && !slices.Contains(b.exec, real) {
		b.exec = append(b.exec, real)
		if !slices.Contains(b.exec, p) && p != real {
			// The name the script uses, where it differs, for the
			// execute rule is made on what the name leads to.
			b.exec = append(b.exec, p)
		}
	}
	b.dependencies(real, executable)
}

// dependencies adds what starting the file at real loads.
func (b *viewBuilder) dependencies(real string, executable bool) {
	level := 1
	if executable {
		level = 2
	}
	if b.seen[real] >= level {
		return
	}
	b.seen[real] = level
	f, err := elf.Open(real)
	if err != nil {
		if interp := shebangOf(real); interp != "" {
			b.program(interp, executable)
		}
		return
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			raw, err := io.ReadAll(io.LimitReader(prog.Open(), 4096))
			if err == nil {
				b.program(strings.TrimRight(string(raw), "\x00"), executable)
			}
		}
	}
	needed, _ := f.DynString(elf.DT_NEEDED)
	var own []string
	for _, tag := range []elf.DynTag{elf.DT_RUNPATH, elf.DT_RPATH} {
		vals, _ := f.DynString(tag)
		for _, v := range vals {
			for _, d := range strings.Split(v, ":") {
				d = strings.ReplaceAll(strings.ReplaceAll(d, "${ORIGIN}", "$ORIGIN"), "$ORIGIN", filepath.Dir(real))
				if d != "" && !strings.Contains(d, "$") {
					own = append(own, d)
				}
			}
		}
	}
	for _, name := range needed {
		b.library(name, own)
	}
}

// library shows the shared library the loader finds for name: by path
// when it has a slash; else in the object's own run paths, then every
// entry of ld.so.cache for it (the loader takes the best its CPU runs),
// then the system library directories.
func (b *viewBuilder) library(name string, own []string) {
	if strings.Contains(name, "/") {
		b.libraryAt(name)
		return
	}
	for _, d := range own {
		if b.libraryAt(filepath.Join(d, name)) {
			return
		}
	}
	found := false
	for _, p := range b.cache[name] {
		found = b.libraryAt(p) || found
	}
	if found {
		return
	}
	for _, d := range b.search {
		if b.libraryAt(filepath.Join(d, name)) {
			return
		}
	}
}

func (b *viewBuilder) libraryAt(p string) bool {
	real, ok := b.file(p)
	if ok {
		b.dependencies(real, false)
	}
	return ok
}

// namesOnPath shows every link in a directory of path that leads to a
// program the script may run: a program named in the list is given by
// its real file (sh as /usr/bin/dash), and the script calls it by the
// name it has on PATH.
func (b *viewBuilder) namesOnPath(path string) {
	programs := map[string]bool{}
	for _, e := range b.exec {
		if b.files[e] {
			programs[e] = true
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if !filepath.IsAbs(dir) {
			continue
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if e.Type()&fs.ModeSymlink == 0 {
				continue
			}
			name := filepath.Join(dir, e.Name())
			if real, err := filepath.EvalSymlinks(name); err == nil && programs[real] {
				b.program(name, true)
			}
		}
	}
}

// librariesOf shows what the program at p loads, not p itself.
func (b *viewBuilder) librariesOf(p string) {
	if real, ok := b.resolve(p); ok {
		b.dependencies(real, false)
	}
}

// programDir shows a declared directory of programs whole, allows every
// program beneath it, and shows the loaders and libraries of each ELF
// program.
func (b *viewBuilder) programDir(p string) {
	real, ok := b.dir(p)
	if !ok {
		return
	}
	b.exec = append(b.exec, real)
	b.scan(real, true)
}

// scan adds the dependencies of every program (or, for executable
// false, every shared object) beneath the directory at real.
func (b *viewBuilder) scan(real string, executable bool) {
	n := 0
	filepath.WalkDir(real, func(p string, d fs.DirEntry, err error) error {
		if n++; err != nil || n > maxDirEntries {
			return fs.SkipDir
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if executable {
			if fi, err := d.Info(); err != nil || fi.Mode()&0o111 == 0 {
				return nil
			}
		} else if !strings.Contains(d.Name(), ".so") {
			return nil
		}
		// ELF files only: the interpreter of a #! script in a granted
		// directory is granted only where the list names it (a
		// directory of npm's scripts does not grant sh).
		if isELF(p) {
			b.dependencies(p, executable)
		}
		return nil
	})
}

// pythonName is a CPython binary's name: python3.11 keeps its standard
// library in PREFIX/lib/python3.11.
var pythonName = regexp.MustCompile(`^python(3(\.[0-9]+)?)$`)

// runtimeNeeds shows what an interpreter reads at run time besides its
// libraries: CPython's standard library, its compiled modules
// (lib-dynload, with their libraries) and the system's site packages.
// Deno and Node are single programs with their libraries.
func (b *viewBuilder) runtimeNeeds(p string) {
	real, ok := b.resolve(p)
	if !ok {
		return
	}
	m := pythonName.FindStringSubmatch(filepath.Base(real))
	if m == nil {
		if filepath.Base(real) == "git" {
			b.dir(filepath.Join(filepath.Dir(filepath.Dir(real)), "share", "git-core", "templates"))
		}
		return
	}
	prefix := filepath.Dir(filepath.Dir(real))
	version := "python" + m[1]
	// The standard library's compiled modules are all in lib-dynload:
	// the rest of it (thousands of .py files) needs no walk.
	if stdlib, ok := b.dir(filepath.Join(prefix, "lib", version)); ok {
		b.scan(filepath.Join(stdlib, "lib-dynload"), false)
	}
	for _, d := range []string{
		filepath.Join(prefix, "lib", "python3", "dist-packages"),
		filepath.Join(prefix, "local", "lib", version, "dist-packages"),
	} {
		if real, ok := b.dir(d); ok {
			b.scan(real, false)
		}
	}
}

// finish lays the view out: nothing shown inside a directory shown whole,
// sorted byte-wise.
func (b *viewBuilder) finish() *execView {
	v := &execView{exec: b.exec}
	dirs := sortedKeys(b.dirs)
	inside := func(p string) bool {
		for _, d := range dirs {
			if p != d && strings.HasPrefix(p, d+"/") {
				return true
			}
		}
		return false
	}
	for _, d := range dirs {
		if !inside(d) {
			v.dirs = append(v.dirs, d)
		}
	}
	dirs = v.dirs
	for _, f := range sortedKeys(b.files) {
		if !inside(f) {
			v.files = append(v.files, f)
		}
	}
	for _, l := range sortedKeys(b.links) {
		if !inside(l) {
			v.links = append(v.links, viewLink{path: l, target: b.links[l]})
		}
	}
	return v
}

// ldCacheX8664 are the entry flags of an x86-64 ELF library
// (FLAG_ELF_LIBC6 | FLAG_X8664_LIB64).
const ldCacheX8664 = 0x0303
