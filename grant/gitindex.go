package grant

import (
	"context"
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

	held    []heldPath        // control paths kept by identity (githeld.go)
	links   []heldLink        // links of the workspace on the way to one
	heldIDs map[fileID]bool   // their identities and those of the directories above them
	seen    map[fileID]string // where this sweep's reads found one of those

	ctx  context.Context
	once sync.Once // the walk
	err  error     // why it failed
}

type dirStamp struct {
	ino   uint64
	ctime unix.Timespec
	racy  bool
}

// NewGitScan is the index of the workspace at host, walked (ScanGit) on
// first use, not before: the run start does not pay for it, nor does a
// run whose model never writes. The first tool call that writes waits
// for the walk, before it changes anything, so what the walk sees is the
// workspace as the call found it.
func NewGitScan(ctx context.Context, host string, skip, allow []string) *GitIndex {
	x := &GitIndex{ctx: ctx, host: host, skip: []string{".harness"}, dirs: map[string]dirStamp{}, gits: map[string]gitEntry{}, bare: map[string]bool{},
		heldIDs: map[fileID]bool{}, seen: map[fileID]string{}}
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
	x.hold(root, x.controlPaths())
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
	return x.controlPaths()
}

func (x *GitIndex) controlPaths() []string {
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

// Sweep finds what a call did to the git control paths since the scan
// or the last sweep, undoes it, and says what it found and did. Each .git
// entry made is removed (a known one moved elsewhere is moved back, a
// known link replaced is made again), each held path moved is put back
// (githeld.go), each directory made a git directory loses its HEAD. Only
// directories whose ctime changed are read, and each held path is
// stat'd once: the workspace is not walked.
func (x *GitIndex) Sweep() []Change {
	if x == nil || x.Wait() != nil {
		return nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	root, err := openRootDir(x.host)
	if err != nil {
		return []Change{{Path: ".", Note: fmt.Sprintf("the workspace cannot be opened to check it: %v", err), Left: true}}
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
	clear(x.seen)
	slices.Sort(changed)
	for _, rel := range changed {
		x.reread(root, rel, now, &found)
	}
	// Held directories first: one moved back brings back what lies in it,
	// .git entries included, which settle then finds where they were.
	made := x.restoreHeld(root, now, &found)
	made = append(made, x.settle(root, found)...)
	made = append(made, x.unbare(root)...)
	made = append(made, x.unreadableChanges()...)
	slices.SortFunc(made, func(a, b Change) int { return strings.Compare(a.String(), b.String()) })
	return made
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
		switch err {
		case unix.ENOENT, unix.ENOTDIR, unix.ELOOP, unix.EXDEV:
			// Gone, or now a file or a link: its parent changed and is
			// read again, which sees what holds the name.
		default:
			// Not searchable by the harness user, or a path longer than
			// the kernel resolves: git may still reach what it holds.
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
	if id := (fileID{st.Dev, st.Ino}); x.heldIDs[id] {
		x.seen[id] = rel
	}
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
