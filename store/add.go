package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/gitsource"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/skills"
)

// FetchTimeout bounds fetching one repository.
const FetchTimeout = 5 * time.Minute

// AddOptions are `harness skills add`: skills from a git repository,
// pinned in the root's skills.lock.json.
type AddOptions struct {
	// Source is where to take skills from; a zero Source installs what
	// the lock says, exactly.
	Source gitsource.Source
	Root   string
	// Skills, when given, are the only skills taken (by name: each
	// directory's, whose SKILL.md must give the same name).
	Skills []string
	// Version, when given, is the version (skills.Skill.Version) the one
	// skill in Skills must have: what an index names, digest and all.
	Version        artifacts.Digest
	TrustedSources []string
	Approve        Approval
	Force          bool
	AllowRisky     bool
	Store          *Store
	Now            func() time.Time
	// Command is who adds, for the store's history ("" = harness skills
	// add).
	Command string
	dryRun  bool
}

// Added is what an add did: per skill, the version placed (or why it was
// left alone), and the refs that moved since the lock pinned them.
type Added struct {
	Skills []AddedSkill
	Moved  []RefMove
}

// AddedSkill is one skill an add or update went through.
type AddedSkill struct {
	Name   string
	Commit string
	// Installed is nil when nothing changed (UpToDate).
	Installed *Installed
	UpToDate  bool
}

// RefMove is a ref that names another commit than the one pinned.
type RefMove struct {
	Skill, URL, Ref, Pinned, Now string
}

// Add installs skills from a git repository through the store, or, with
// no source, re-installs what the lock pins (the same commit, the same
// tree digest, or a clear error).
func Add(ctx context.Context, o AddOptions) (*Added, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Root == "" {
		return nil, outcome.Usage("install_root_invalid", "no skills root to add to: give --to ROOT")
	}
	root, err := filepath.Abs(o.Root)
	if err != nil {
		return nil, outcome.Usage("install_root_invalid", "--to %s: %v", o.Root, err)
	}
	o.Root = root
	if o.Source.URL == "" {
		return addLocked(ctx, o)
	}
	if err := trustSource(o.Source.URL, "", o.TrustedSources); err != nil {
		return nil, err
	}
	repo, done, err := fetch(ctx, o.Root, o.Source.URL)
	if err != nil {
		return nil, err
	}
	defer done()
	commit, err := repo.Resolve(o.Source.Ref)
	if err != nil {
		return nil, outcome.Usage("install_ref_unknown", "%v", err)
	}
	return addAt(ctx, o, repo, commit, o.Source.Path, o.Source.Ref, nil)
}

// addAt stages dir of commit and places each skill in it.
func addAt(ctx context.Context, o AddOptions, repo *gitsource.Repo, commit, dir, ref string, want map[string]LockEntry) (*Added, error) {
	stage, done, err := newStage(o.Root)
	if err != nil {
		return nil, err
	}
	defer done()
	tree := filepath.Join(stage, "tree")
	if err := writeCommit(repo, commit, dir, tree); err != nil {
		return nil, err
	}
	found, err := skillDirsIn(tree)
	if err != nil {
		return nil, err
	}
	if o.Version != "" && len(o.Skills) != 1 {
		return nil, errors.New("add: a version is asked for one skill at a time")
	}
	// Each skill is installed under its SKILL.md's name: two of one name
	// would have the second replace the first, so the tree is refused.
	named := map[string]string{}
	names := make([]string, len(found))
	for i, rel := range found {
		names[i] = nameIn(ctx, filepath.Join(tree, filepath.FromSlash(rel)), rel, dir)
		if other, ok := named[names[i]]; ok {
			return nil, outcome.Failed("install_name_twice", "%s at %s: %s and %s are both named %s; nothing was installed", repo.URL, shortCommit(commit), repoPath(dir, other), repoPath(dir, rel), names[i])
		}
		named[names[i]] = rel
	}
	if len(o.Skills) > 0 {
		var kept []string
		for _, name := range o.Skills {
			i := slices.IndexFunc(found, func(rel string) bool { return path.Base(rel) == name || rel == "." && path.Base(dir) == name })
			if i < 0 {
				return nil, outcome.Usage("install_skill_unknown", "%s at %s has no skill %s (it has: %s)", repo.URL, shortCommit(commit), name, strings.Join(skillNames(found, dir), ", "))
			}
			if names[i] != name {
				return nil, outcome.Policy("install_name_mismatch", "%s at %s: %s holds a skill named %s, not %s; nothing was installed", repo.URL, shortCommit(commit), repoPath(dir, found[i]), names[i], name)
			}
			kept = append(kept, found[i])
		}
		found = kept
	}
	out := &Added{}
	for _, rel := range found {
		pin := &GitPin{URL: repo.URL, Ref: ref, Commit: commit, Path: repoPath(dir, rel)}
		in, err := place(ctx, placement{
			Dir: filepath.Join(tree, filepath.FromSlash(rel)), Stage: stage,
			Source: pin.String(), Shown: pin.String(), Root: o.Root, Store: o.Store,
			Force: o.Force, AllowRisky: o.AllowRisky, Approve: &o.Approve, Git: pin,
			Replaces: func(e LockEntry) bool { return e.Git != nil && e.Git.URL == pin.URL && e.Git.Path == pin.Path },
			Held:     grew, Want: want, Version: o.Version, DryRun: o.dryRun, Command: cmp.Or(o.Command, "harness skills add"), Now: o.Now,
		})
		if err != nil {
			return nil, err
		}
		out.Skills = append(out.Skills, AddedSkill{Name: in.Name, Commit: commit, Installed: in})
	}
	return out, nil
}

// addLocked installs every git-pinned skill of the lock at its commit.
func addLocked(ctx context.Context, o AddOptions) (*Added, error) {
	lock, err := ReadLock(o.Root)
	if err != nil {
		return nil, err
	}
	out := &Added{}
	repos := map[string]*gitsource.Repo{}
	for _, name := range sortedGit(lock, o.Skills) {
		e := lock.Skills[name]
		pin := e.Git
		if err := trustSource(pin.URL, name, o.TrustedSources); err != nil {
			return nil, err
		}
		if current(o.Root, name, e) {
			out.Skills = append(out.Skills, AddedSkill{Name: name, Commit: pin.Commit, UpToDate: true})
		} else {
			repo, ok := repos[pin.URL]
			if !ok {
				var done func()
				if repo, done, err = fetch(ctx, o.Root, pin.URL); err != nil {
					return nil, err
				}
				defer done()
				repos[pin.URL] = repo
			}
			if !repo.Has(pin.Commit) {
				return nil, outcome.Failed("install_commit_gone", "%s pins %s of %s, which the repository no longer holds (the ref %q moved and nothing left in it reaches that commit): `harness skills update %s` takes what the ref names now", name, shortCommit(pin.Commit), pin.URL, pin.Ref, name)
			}
			o.Force = true
			added, err := addAt(ctx, o, repo, pin.Commit, pin.Path, pin.Ref, map[string]LockEntry{name: e})
			if err != nil {
				return nil, err
			}
			out.Skills = append(out.Skills, added.Skills...)
		}
		if now, err := gitsource.RemoteRef(ctx, pin.URL, pin.Ref); err == nil && now != "" && now != pin.Commit {
			out.Moved = append(out.Moved, RefMove{Skill: name, URL: pin.URL, Ref: pin.Ref, Pinned: pin.Commit, Now: now})
		}
	}
	return out, nil
}

// Outdated lists the git-pinned skills of root whose ref names another
// commit now.
func Outdated(ctx context.Context, root string, names []string) ([]RefMove, error) {
	lock, err := ReadLock(root)
	if err != nil {
		return nil, err
	}
	var out []RefMove
	for _, name := range sortedGit(lock, names) {
		pin := lock.Skills[name].Git
		// Outdated trusts nothing it installs, but a URL a server may
		// resolve elsewhere is not asked about either: the answer would be
		// another repository's.
		if err := gitsource.CheckURL(pin.URL); err != nil {
			return nil, outcome.Policy("install_source_invalid", "%s (pinned for %s) is refused: %v", pin.URL, name, err)
		}
		now, err := gitsource.RemoteRef(ctx, pin.URL, pin.Ref)
		if err != nil {
			return nil, &outcome.Error{Code: "source_unreachable", Msg: fmt.Sprintf("%s (%s): %v", name, pin.URL, err), Exit: outcome.ExitProvider, Err: err}
		}
		if now != pin.Commit {
			out = append(out, RefMove{Skill: name, URL: pin.URL, Ref: pin.Ref, Pinned: pin.Commit, Now: now})
		}
	}
	return out, nil
}

// sortedGit are the git-pinned skills of the lock (only names, when
// given), sorted.
func sortedGit(lock *SkillsLock, names []string) []string {
	var out []string
	for name, e := range lock.Skills {
		if e.Git != nil && (len(names) == 0 || slices.Contains(names, name)) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// current reports whether the live copy of name is the tree the lock pins.
func current(root, name string, e LockEntry) bool {
	reg, err := skills.Scan(context.Background(), skills.ScanOptions{Roots: []string{root}})
	if err != nil {
		return false
	}
	s, ok := reg.Lookup(name)
	return ok && s.TreeDigest == e.TreeDigest && s.Digest == e.SkillDigest
}

// grew holds a new version for a person when it asks for more than the
// live one had: a higher risk tier, or a permission it did not have.
func grew(live *LockEntry, risk skills.Risk, perms *skills.Permissions) bool {
	if live == nil || live.Risk == nil {
		return false
	}
	return risk > *live.Risk || len(NewPermissions(live.Permissions, perms)) > 0
}

// NewPermissions lists what after grants that before did not.
func NewPermissions(before, after *skills.Permissions) []string {
	if after == nil {
		return nil
	}
	if before == nil {
		before = &skills.Permissions{}
	}
	var out []string
	add := func(kind string, was, now []string) {
		for _, v := range now {
			if !slices.Contains(was, v) {
				out = append(out, kind+" "+v)
			}
		}
	}
	add("read", before.Filesystem.Read, after.Filesystem.Read)
	add("write", before.Filesystem.Write, after.Filesystem.Write)
	add("network", before.Network, after.Network)
	add("env", before.Env, after.Env)
	add("exec", before.Exec, after.Exec)
	if after.Credentials && !before.Credentials {
		out = append(out, "credentials")
	}
	return out
}

// fetch fetches u into a staging directory of root (held, so that a
// concurrent install's sweep of stale stages leaves it alone), removed
// when done is called.
func fetch(ctx context.Context, root, u string) (*gitsource.Repo, func(), error) {
	dir, done, err := newStage(root)
	if err != nil {
		return nil, nil, err
	}
	// A CI job must not hang on a server that stops sending; what was
	// fetched is read from disk afterwards, outside this bound.
	ctx, cancel := context.WithTimeout(ctx, FetchTimeout)
	defer cancel()
	repo, err := gitsource.Fetch(ctx, u, filepath.Join(dir, "repo.git"))
	if err != nil {
		done()
		return nil, nil, &outcome.Error{Code: "source_unreachable", Msg: err.Error() + "; check the URL, the network and your git credentials", Exit: outcome.ExitProvider, Err: err}
	}
	return repo, done, nil
}

// trustSource refuses u unless it lies under a trusted source (the rule
// is gitsource.Trusted's); pinned names the skill a lock pins it for.
// A URL whose path a server may resolve elsewhere is refused as such, so
// that a lock written by hand cannot carry it past the check.
func trustSource(u, pinned string, prefixes []string) error {
	what := u
	if pinned != "" {
		what = fmt.Sprintf("%s (pinned for %s)", u, pinned)
	}
	if err := gitsource.CheckURL(u); err != nil {
		return outcome.Policy("install_source_invalid", "%s is refused: %v", what, err)
	}
	if !gitsource.Trusted(u, prefixes) {
		return outcome.Policy("install_source_untrusted", "%s is not a trusted source; add a URL prefix of it to skills.trustedSources in the --config file (trusted now: %s)", what, listOrNone(prefixes))
	}
	return nil
}

// writeCommit writes dir of commit into dst with the install's rules:
// nothing outside dst, no special files or submodules, bounded.
func writeCommit(repo *gitsource.Repo, commit, dir, dst string) error {
	w, err := newTreeWriter(dst)
	if err != nil {
		return err
	}
	defer w.root.Close()
	err = repo.Walk(commit, dir, func(e gitsource.Entry) error {
		switch e.Kind {
		case gitsource.KindDir:
			return w.dir(e.Name)
		case gitsource.KindLink:
			return w.link(e.Name, e.Target)
		case gitsource.KindFile, gitsource.KindExecutable:
			if e.Size > maxInstallBytes {
				return unsafeEntry("%s is %d bytes, more than a skill may hold (%d); nothing was installed", e.Name, e.Size, maxInstallBytes)
			}
			rc, err := e.Open()
			if err != nil {
				return err
			}
			defer rc.Close()
			mode := fs.FileMode(0o644)
			if e.Kind == gitsource.KindExecutable {
				mode = 0o755
			}
			return w.file(e.Name, mode, rc)
		}
		return unsafeEntry("%s is a submodule or another entry no skill can hold; nothing was installed", e.Name)
	})
	if err != nil {
		var oe *outcome.Error
		if errors.As(err, &oe) {
			return err
		}
		return outcome.Usage("install_source_invalid", "%v", err)
	}
	return w.finishLinks()
}

// skillDirsIn are the directories of tree holding SKILL.md (slash paths,
// "." for tree itself), not looking below a skill.
func skillDirsIn(tree string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(tree, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if fi, err := os.Lstat(filepath.Join(p, "SKILL.md")); err == nil && fi.Mode().IsRegular() {
			rel, _ := filepath.Rel(tree, p)
			out = append(out, filepath.ToSlash(rel))
			return fs.SkipDir
		}
		return nil
	})
	if err == nil && len(out) == 0 {
		err = outcome.Usage("install_invalid", "no SKILL.md in the source")
	}
	return out, err
}

// repoPath is the path in the repository of rel, a skill directory of
// the tree written from dir.
func repoPath(dir, rel string) string {
	if rel == "." {
		return dir
	}
	return path.Join(dir, rel)
}

// nameIn is the name the SKILL.md in skillDir gives, or its directory's
// name when it gives none (validation refuses it later).
func nameIn(ctx context.Context, skillDir, rel, dir string) string {
	if v, err := skills.Validate(ctx, skillDir, skills.ValidateOptions{}); err == nil && len(v.Skills) == 1 && v.Skills[0].Name != "" {
		return v.Skills[0].Name
	}
	return path.Base(repoPath(dir, rel))
}

func skillNames(found []string, dir string) []string {
	var out []string
	for _, rel := range found {
		if rel == "." {
			rel = dir
		}
		out = append(out, path.Base(rel))
	}
	return out
}

// String is the pin as a source: URL#PATH@COMMIT.
func (p *GitPin) String() string {
	s := p.URL
	if p.Path != "" {
		s += "#" + p.Path
	}
	return s + "@" + p.Commit
}

func shortCommit(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

// UpdateOptions are `harness skills update`: the git-pinned skills of a
// root taken to what their refs name now.
type UpdateOptions struct {
	Root           string
	Skills         []string
	DryRun         bool
	TrustedSources []string
	Approve        Approval
	AllowRisky     bool
	Store          *Store
	Now            func() time.Time
}

// Updated is one skill an update looked at.
type Updated struct {
	Name             string
	URL, Ref         string
	From, To         string
	RiskBefore       *skills.Risk
	NewPermissions   []string
	Installed        *Installed // nil when the ref has not moved
	DryRun, UpToDate bool
}

// Update fetches each git-pinned skill's ref and, where it moved, places
// the new version: pending when its risk or permissions grew, or its risk
// is above the approval tier. DryRun only says what would change.
func Update(ctx context.Context, o UpdateOptions) ([]Updated, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	root, err := filepath.Abs(o.Root)
	if err != nil {
		return nil, outcome.Usage("install_root_invalid", "--to %s: %v", o.Root, err)
	}
	lock, err := ReadLock(root)
	if err != nil {
		return nil, err
	}
	names := sortedGit(lock, o.Skills)
	for _, n := range o.Skills {
		if !slices.Contains(names, n) {
			return nil, outcome.Usage("update_skill_unknown", "%s is not a skill added from git in %s (skills.lock.json pins none by that name)", n, root)
		}
	}
	var out []Updated
	repos := map[string]*gitsource.Repo{}
	for _, name := range names {
		e := lock.Skills[name]
		pin := e.Git
		if err := trustSource(pin.URL, name, o.TrustedSources); err != nil {
			return nil, err
		}
		repo, ok := repos[pin.URL]
		if !ok {
			var done func()
			if repo, done, err = fetch(ctx, root, pin.URL); err != nil {
				return nil, err
			}
			defer done()
			repos[pin.URL] = repo
		}
		commit, err := repo.Resolve(pin.Ref)
		if err != nil {
			return nil, outcome.Usage("install_ref_unknown", "%s: %v", name, err)
		}
		u := Updated{Name: name, URL: pin.URL, Ref: pin.Ref, From: pin.Commit, To: commit, RiskBefore: e.Risk, DryRun: o.DryRun}
		if commit == pin.Commit {
			u.UpToDate = true
			out = append(out, u)
			continue
		}
		added, err := addAt(ctx, AddOptions{Root: root, Approve: o.Approve, AllowRisky: o.AllowRisky, Store: o.Store, Now: o.Now, Force: true, dryRun: o.DryRun},
			repo, commit, pin.Path, pin.Ref, nil)
		if err != nil {
			return nil, err
		}
		for _, a := range added.Skills {
			if a.Name == name {
				u.Installed = a.Installed
				u.NewPermissions = NewPermissions(e.Permissions, a.Installed.Permissions)
			}
		}
		out = append(out, u)
	}
	return out, nil
}
