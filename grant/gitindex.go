package grant

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/harness-dev/harness/workspace"
)

// Git control paths.
//
// git runs code from a repository's directory on the host: hooks,
// core.hooksPath, core.fsmonitor, filters in its config. Any .git in the
// workspace, not only the root's, is such a directory, or a file naming
// one: `git status` at the root recurses into a submodule, whose .git file
// says where its repository is, and a person working in a nested
// repository runs what its config says. So every .git the run finds at
// its start is kept read-only (with the directory a .git file names, and
// the .gitmodules files), and a .git that appears during a call is
// removed after it.
//
// Finding them must not cost a walk of the workspace per call: one walk
// at run start records every directory with its inode and change time
// (st_ctim, which no user can set, unlike st_mtim); making, removing or
// renaming an entry changes its directory's ctime, so a sweep after a
// call stats each known directory and reads only those that changed,
// walking whole any directory it did not know.

// racyWindow is how recent a directory's ctime may be and still be
// trusted not to change again within the same clock tick: file times come
// from a coarse clock, so an entry made right after the directory was
// read can leave its ctime unchanged. Such a directory is read again at
// the next sweep (git's index has the same rule for racy timestamps).
const racyWindow = time.Second

// GitIndex is the workspace's git control paths found at run start, and
// what a sweep needs to find the .git entries made since.
type GitIndex struct {
	host  string
	skip  []string // clean relative paths not walked: .harness, run directories
	allow []string // host paths the operator allows writes to (--allow-protected-write)

	mu         sync.Mutex
	dirs       map[string]dirStamp
	gits       map[string]gitEntry // every .git entry, by relative path
	mods       []string            // .gitmodules files, relative
	bare       map[string]bool     // directories git takes for a git directory (HEAD, objects, refs) at the scan
	newBare    []string            // such directories found by the sweep's reads, not yet settled
	unreadable []string            // directories a sweep could not open, even after unlock
	listed     int                 // directories listed, for tests and benchmarks

	ctx  context.Context
	once sync.Once // the walk
	err  error     // why it failed
}

type dirStamp struct {
	ino   uint64
	ctime unix.Timespec
	racy  bool
}

// gitEntry is what a .git was when the run found it, so that one moved
// (an ancestor renamed under bwrap) can be put back and a link replaced
// can be made again.
type gitEntry struct {
	dev, ino uint64
	mode     uint32 // S_IFMT bits
	link     string // the target of a .git that is a link
}

// NewGitScan is the index of the workspace at host, walked (ScanGit) on
// first use, not before: the run start does not pay for it, nor does a
// run whose model never writes. The first tool call that writes waits
// for the walk, before it changes anything, so what the walk sees is the
// workspace as the call found it.
func NewGitScan(ctx context.Context, host string, skip, allow []string) *GitIndex {
	x := &GitIndex{ctx: ctx, host: host, skip: []string{".harness"}, dirs: map[string]dirStamp{}, gits: map[string]gitEntry{}, bare: map[string]bool{}}
	if abs, err := filepath.Abs(host); err == nil {
		x.host = abs
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			x.host = real
		}
	}
	for _, s := range skip {
		if abs, err := filepath.Abs(s); err == nil && workspace.Within(x.host, abs) && abs != x.host {
			if rel, err := filepath.Rel(x.host, abs); err == nil {
				x.skip = append(x.skip, filepath.ToSlash(rel))
			}
		}
	}
	for _, a := range allow {
		if abs, err := filepath.Abs(a); err == nil {
			x.allow = append(x.allow, abs)
		}
	}
	return x
}

// ScanGit walks the workspace at host once, never following a link and
// never entering a .git, .harness or a path of skip (host paths: the run
// directories), and indexes what it finds.
func ScanGit(ctx context.Context, host string, skip, allow []string) (*GitIndex, error) {
	x := NewGitScan(ctx, host, skip, allow)
	if err := x.Wait(); err != nil {
		return nil, err
	}
	return x, nil
}

// Wait walks the workspace if that was not done yet and returns why the
// walk failed, if it did.
func (x *GitIndex) Wait() error {
	x.once.Do(func() { x.err = x.scan(x.ctx) })
	return x.err
}

func (x *GitIndex) scan(ctx context.Context) error {
	root, err := openRootDir(x.host)
	if err != nil {
		return fmt.Errorf("workspace %s: %w", x.host, err)
	}
	defer unix.Close(root)
	var found []string
	if err := x.walk(ctx, root, ".", time.Now(), &found); err != nil {
		return err
	}
	for _, rel := range found {
		x.gits[rel] = x.identify(root, rel)
	}
	for _, rel := range x.newBare {
		x.bare[rel] = true
	}
	x.newBare, x.unreadable = nil, nil
	return nil
}

// ControlPaths are the host paths to keep read-only: every .git found,
// the directory each .git file names with its commondir, and every
// .gitmodules. A walk that failed (the run interrupted, a directory
// that vanished under it) leaves the whole workspace read-only: what was
// not looked at is not known to be harmless.
func (x *GitIndex) ControlPaths() []string {
	if x == nil {
		return nil
	}
	if x.Wait() != nil {
		return []string{x.host}
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []string
	var named []string
	for _, rel := range slices.Sorted(maps.Keys(x.gits)) {
		p := filepath.Join(x.host, filepath.FromSlash(rel))
		out = append(out, p)
		worktree := filepath.Dir(p)
		gitdirs := []string{p}
		if target := gitdirOf(p); target != "" {
			out = append(out, target)
			gitdirs = append(gitdirs, target)
			if common := commondirOf(target); common != "" {
				out = append(out, common)
				gitdirs = append(gitdirs, common)
			}
		}
		for _, d := range gitdirs {
			configTargets(filepath.Join(d, "config"), worktree, 0, &named)
		}
	}
	for _, p := range named {
		if workspace.Within(x.host, p) && p != x.host && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	for _, rel := range x.mods {
		out = append(out, filepath.Join(x.host, filepath.FromSlash(rel)))
	}
	return out
}

// Sweep finds the .git entries made since the scan or the last sweep:
// each is removed (a known one moved elsewhere is moved back, a known link
// replaced is made again), and returned as the relative paths it was
// found at. Only directories whose ctime changed are read.
func (x *GitIndex) Sweep() []string {
	if x == nil || x.Wait() != nil {
		return nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	root, err := openRootDir(x.host)
	if err != nil {
		return nil
	}
	defer unix.Close(root)
	now := time.Now()
	var changed []string
	for rel, old := range x.dirs {
		var st unix.Stat_t
		// One system call per directory: a link on the way can only make
		// the stamp differ, and what is then read again is opened without
		// following links.
		if err := unix.Fstatat(root, rel, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR || st.Ino != old.ino {
			// Gone or replaced: its parent changed too and is read again,
			// which walks whatever is at this name now.
			delete(x.dirs, rel)
			continue
		}
		if st.Ctim != old.ctime || old.racy {
			changed = append(changed, rel)
		}
	}
	var found []string
	slices.Sort(changed)
	for _, rel := range changed {
		x.reread(root, rel, now, &found)
	}
	made := x.settle(root, found)
	made = append(made, x.unbare(root)...)
	for _, rel := range x.unreadable {
		made = append(made, rel+" (a directory the check after the call cannot open: what it holds is not known to be harmless)")
	}
	x.unreadable = nil
	slices.Sort(made)
	return made
}

// unbare undoes each git directory made since the scan that is not a
// .git (HEAD beside objects and refs, which git accepts as a repository
// where it finds no .git): its HEAD is removed, after which git no longer
// takes the directory for one. A HEAD that cannot be removed is said so.
func (x *GitIndex) unbare(root int) []string {
	var made []string
	for _, rel := range x.newBare {
		if x.bare[rel] || x.allowed(rel) {
			continue
		}
		head := path.Join(rel, "HEAD")
		what := head + " (made " + rel + " a git directory: HEAD beside objects and refs; HEAD removed)"
		if err := removeChecked(root, head); err != nil {
			what = fmt.Sprintf("%s (made %s a git directory: HEAD beside objects and refs; HEAD could not be removed: %v)", head, rel, err)
		}
		made = append(made, what)
		x.touched(head)
	}
	x.newBare = nil
	return made
}

// removeChecked removes the entry rel (a whole tree, never following
// links) and reports whether it is gone.
func removeChecked(root int, rel string) error {
	err := removeOnce(root, rel)
	if err != nil && unlock(root, path.Dir(rel)) || err != nil && unlock(root, rel) {
		// A script running as the harness user can take write away
		// from the directory or the entry to keep it; give it back once.
		unlock(root, rel)
		err = removeOnce(root, rel)
	}
	return err
}

func removeOnce(root int, rel string) error {
	dir, err := openBeneath(root, path.Dir(rel))
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	r, err := os.OpenRoot(fmt.Sprintf("/proc/self/fd/%d", dir))
	if err != nil {
		return err
	}
	defer r.Close()
	if err := r.RemoveAll(path.Base(rel)); err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Fstatat(dir, path.Base(rel), &st, unix.AT_SYMLINK_NOFOLLOW); err != unix.ENOENT {
		return fmt.Errorf("still there")
	}
	return nil
}

// settle deals with the .git entries found in changed directories: a
// known one where it was is left; one that is a known entry moved (same
// inode) goes back; anything else is removed. Known entries no longer
// where they were and not found moved are reported too.
func (x *GitIndex) settle(root int, found []string) []string {
	var made []string
	moved := map[string]string{} // known relative path -> where it is now
	for _, rel := range found {
		if x.allowed(rel) {
			continue
		}
		id := x.identify(root, rel)
		if known, ok := x.gits[rel]; ok && known.same(id) {
			continue
		}
		if from, ok := x.knownAs(id); ok && from != rel {
			moved[from] = rel
			continue
		}
		made = append(made, rel)
	}
	for i, rel := range made {
		if err := removeChecked(root, rel); err != nil {
			made[i] = fmt.Sprintf("%s (it could not be removed: %v)", rel, err)
		}
		x.touched(rel)
	}
	for rel, known := range x.gits {
		if id := x.identify(root, rel); known.same(id) {
			continue
		}
		if at, ok := moved[rel]; ok {
			// The entry was moved with an ancestor: whatever now holds its
			// name goes, and it goes back.
			if err := moveBack(root, at, rel); err != nil {
				made = append(made, fmt.Sprintf("%s (moved to %s; it could not be moved back: %v)", rel, at, err))
			} else {
				made = append(made, fmt.Sprintf("%s (moved to %s; moved back)", rel, at))
			}
			x.touched(rel)
			x.touched(at)
			continue
		}
		if known.mode == unix.S_IFLNK {
			if dir, err := makeParent(root, rel); err == nil {
				removeIn(dir, path.Base(rel))
				if unix.Symlinkat(known.link, dir, path.Base(rel)) == nil {
					made = append(made, rel+" (a link, replaced; made again)")
				}
				unix.Close(dir)
			}
			x.touched(rel)
		}
	}
	slices.Sort(made)
	return made
}

// The sweep changes the host, outside every sandbox, where a link the
// script left would lead the change elsewhere (a link in place of a
// submodule's directory, pointing at a nested repository, would have a
// move back land in it). So every change is made relative to a parent
// directory opened without following any link, and names one entry.

// removeAt removes the entry rel (a whole tree, never following links).
func removeAt(root int, rel string) {
	dir, err := openBeneath(root, path.Dir(rel))
	if err != nil {
		return
	}
	defer unix.Close(dir)
	removeIn(dir, path.Base(rel))
}

// removeIn removes the entry name of the open directory dir.
func removeIn(dir int, name string) {
	r, err := os.OpenRoot(fmt.Sprintf("/proc/self/fd/%d", dir))
	if err != nil {
		return
	}
	defer r.Close()
	r.RemoveAll(name)
}

// makeParent opens the directory rel lies in, making the directories on
// the way that are missing and replacing with one whatever else holds
// their names (a link or file the script left there).
func makeParent(root int, rel string) (int, error) {
	dir, err := unix.Dup(root)
	if err != nil {
		return -1, err
	}
	if d := path.Dir(rel); d != "." {
		for _, name := range strings.Split(d, "/") {
			var st unix.Stat_t
			if err := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR {
				removeIn(dir, name)
			}
			unix.Mkdirat(dir, name, 0o755)
			next, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			unix.Close(dir)
			if err != nil {
				return -1, err
			}
			dir = next
		}
	}
	return dir, nil
}

// moveBack moves the entry at back to rel, replacing what holds rel.
func moveBack(root int, at, rel string) error {
	from, err := openBeneath(root, path.Dir(at))
	if err != nil {
		return err
	}
	defer unix.Close(from)
	to, err := makeParent(root, rel)
	if err != nil {
		return err
	}
	defer unix.Close(to)
	removeIn(to, path.Base(rel))
	return unix.Renameat(from, path.Base(at), to, path.Base(rel))
}

// touched marks the directory of rel to be read again at the next sweep:
// the sweep itself changed it.
func (x *GitIndex) touched(rel string) {
	if d, ok := x.dirs[path.Dir(rel)]; ok {
		d.racy = true
		x.dirs[path.Dir(rel)] = d
	}
}

func (x *GitIndex) allowed(rel string) bool {
	p := filepath.Join(x.host, filepath.FromSlash(rel))
	for _, a := range x.allow {
		if workspace.Within(a, p) {
			return true
		}
	}
	return false
}

func (x *GitIndex) knownAs(id gitEntry) (string, bool) {
	if id.mode == 0 {
		return "", false
	}
	for rel, known := range x.gits {
		if known.same(id) && known.mode != unix.S_IFLNK {
			return rel, true
		}
	}
	return "", false
}

func (e gitEntry) same(o gitEntry) bool {
	return e.mode != 0 && e.mode == o.mode && e.dev == o.dev && e.ino == o.ino
}

// identify describes the entry rel, never following it (zero when absent).
func (x *GitIndex) identify(root int, rel string) gitEntry {
	var st unix.Stat_t
	if fstatat(root, rel, &st) != nil {
		return gitEntry{}
	}
	e := gitEntry{dev: st.Dev, ino: st.Ino, mode: st.Mode & unix.S_IFMT}
	if e.mode == unix.S_IFLNK {
		e.link, _ = os.Readlink(filepath.Join(x.host, filepath.FromSlash(rel)))
	}
	return e
}

// walk records dir (relative to root) and everything below it: each
// directory's stamp, the .git entries in found, the .gitmodules files.
func (x *GitIndex) walk(ctx context.Context, root int, rel string, now time.Time, found *[]string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	subdirs := x.read(root, rel, now, found)
	for _, sub := range subdirs {
		if err := x.walk(ctx, root, sub, now, found); err != nil {
			return err
		}
	}
	return nil
}

// reread reads a known directory that changed: its .git entries go to
// found, and its subdirectories the index does not know are walked whole.
func (x *GitIndex) reread(root int, rel string, now time.Time, found *[]string) {
	for _, sub := range x.read(root, rel, now, found) {
		if _, ok := x.dirs[sub]; !ok {
			x.walk(context.Background(), root, sub, now, found)
		}
	}
}

// read lists one directory, stamps it, and returns its subdirectories to
// enter. A directory that cannot be opened is stamped from outside, so
// that the next sweep tries it again once it changes.
func (x *GitIndex) read(root int, rel string, now time.Time, found *[]string) []string {
	fd, err := openBeneath(root, rel)
	if err == unix.EACCES && unlock(root, rel) {
		fd, err = openBeneath(root, rel)
	}
	if err != nil {
		if err == unix.EACCES {
			x.unreadable = append(x.unreadable, rel)
		}
		var st unix.Stat_t
		if fstatat(root, rel, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
			x.dirs[rel] = stampOf(&st, now)
		}
		return nil
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	x.listed++
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return nil
	}
	x.dirs[rel] = stampOf(&st, now)
	entries, _ := f.ReadDir(-1)
	var subdirs []string
	held := 0
	for _, de := range entries {
		if slices.Contains([]string{"HEAD", "objects", "refs"}, de.Name()) {
			held++
		}
	}
	if held == 3 {
		x.newBare = append(x.newBare, rel)
	}
	for _, de := range entries {
		sub := path.Join(rel, de.Name())
		switch {
		case workspace.IsGitName(de.Name()):
			*found = append(*found, sub)
		case de.Name() == ".gitmodules":
			if !slices.Contains(x.mods, sub) {
				x.mods = append(x.mods, sub)
			}
		case de.IsDir() && !slices.Contains(x.skip, sub):
			// os reads the type with lstat where getdents gives none: a
			// link to a directory is never entered.
			subdirs = append(subdirs, sub)
		}
	}
	return subdirs
}

func stampOf(st *unix.Stat_t, now time.Time) dirStamp {
	ct := time.Unix(st.Ctim.Unix())
	return dirStamp{ino: st.Ino, ctime: st.Ctim, racy: !ct.Before(now.Add(-racyWindow))}
}

func openRootDir(host string) (int, error) {
	return unix.Open(host, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
}

// openBeneath opens the directory rel below root for listing, refusing a
// link anywhere on the way: what is read is what lies in the workspace.
func openBeneath(root int, rel string) (int, error) {
	if rel == "." {
		return unix.Openat(root, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	}
	return unix.Openat2(root, rel, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
}

func fstatat(root int, rel string, st *unix.Stat_t) error {
	if rel == "." {
		return unix.Fstat(root, st)
	}
	// A path through a link is not the entry the index knows.
	fd, err := unix.Openat2(root, rel, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err == unix.ELOOP {
		// The final component is a link (O_PATH|O_NOFOLLOW opens a link
		// itself, so this is a link on the way).
		return errors.New("through a link")
	}
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Fstat(fd, st)
}

// unlock gives the owner read, write and search on the directory rel when
// the harness user owns it: a script running as that user can take them
// away to hide what it made there from the check after the call, and git
// needs only search to reach it. Reports whether the mode was changed.
func unlock(root int, rel string) bool {
	if rel == "." {
		return false
	}
	fd, err := unix.Openat2(root, rel, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR || int(st.Uid) != os.Geteuid() {
		return false
	}
	return unix.Chmod(fmt.Sprintf("/proc/self/fd/%d", fd), (st.Mode&0o7777)|0o700) == nil
}
