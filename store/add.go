package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
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
	repo, done, err := fetch(ctx, o.Root, o.Source.URL, o.Source.Ref, "")
	if err != nil {
		return nil, err
	}
	defer done()
	return addAt(ctx, o, repo, repo.Commit, o.Source.Path, o.Source.Ref)
}

// addAt stages dir of commit and places each skill in it.
func addAt(ctx context.Context, o AddOptions, repo *gitsource.Repo, commit, dir, ref string) (*Added, error) {
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
			Held:     grew, Version: o.Version, DryRun: o.dryRun, Command: cmp.Or(o.Command, "harness skills add"), Now: o.Now,
		})
		if err != nil {
			return nil, err
		}
		out.Skills = append(out.Skills, AddedSkill{Name: in.Name, Commit: commit, Installed: in})
	}
	return out, nil
}

// addPinned places the one skill a lock entry pins: the skill named name
// at the entry's path of commit, and nothing else. The path is the skill's
// own directory; an entry edited to name a directory holding other skills
// is refused, not taken as leave to install them all. It replaces the live
// copy only when the store put it there: a skill the store has no current
// version of in this root is the operator's own.
func addPinned(ctx context.Context, o AddOptions, repo *gitsource.Repo, name string, pin *GitPin, commit string, want map[string]LockEntry) (*Installed, error) {
	if err := managed(ctx, o.Store, o.Root, name); err != nil {
		return nil, err
	}
	stage, done, err := newStage(o.Root)
	if err != nil {
		return nil, err
	}
	defer done()
	tree := filepath.Join(stage, "tree")
	if err := writeCommit(repo, commit, pin.Path, tree); err != nil {
		return nil, err
	}
	found, err := skillDirsIn(tree)
	if err != nil {
		return nil, err
	}
	if len(found) != 1 || found[0] != "." || nameIn(ctx, tree, ".", pin.Path) != name {
		held := fmt.Sprintf("%d skills (%s)", len(found), strings.Join(skillNames(found, pin.Path), ", "))
		if len(found) == 1 {
			held = "the skill " + nameIn(ctx, filepath.Join(tree, filepath.FromSlash(found[0])), found[0], pin.Path)
			if found[0] != "." {
				held += " at " + repoPath(pin.Path, found[0])
			}
		}
		return nil, outcome.Policy("install_pin_mismatch", "skills.lock.json pins %s at %s of %s, which holds %s, not the one skill %s; nothing was installed (an entry's path is that skill's own directory: restore the entry, or add the skill again from its source)",
			name, pathOrTop(pin.Path), pin.URL, held, name)
	}
	at := &GitPin{URL: repo.URL, Ref: pin.Ref, Commit: commit, Path: pin.Path}
	return place(ctx, placement{
		Dir: tree, Stage: stage, Source: at.String(), Shown: at.String(), Root: o.Root, Store: o.Store,
		Force: true, AllowRisky: o.AllowRisky, Approve: &o.Approve, Git: at,
		Held: grew, Want: want, DryRun: o.dryRun, Command: cmp.Or(o.Command, "harness skills add"), Now: o.Now,
	})
}

// managed refuses name in root when a skill of that name is there that
// is not the version the store made live: the store keeps no live version
// of it in this root, or the directory was changed since. Such a skill is
// the operator's (written or edited by hand, or installed with another
// store); replacing it would lose it, with nothing to roll back to.
func managed(ctx context.Context, st *Store, root, name string) error {
	if _, err := os.Lstat(filepath.Join(root, name)); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if st == nil {
		return errors.New("install: no skill store")
	}
	h, err := st.History(name)
	if err != nil {
		return err
	}
	if h.Current == "" || h.Root != root {
		return outcome.Policy("install_unmanaged", "%s in %s was not installed through the skill store %s (it keeps no live version of it there): skills.lock.json's entry for %s will not replace it; nothing was installed (move the directory away to install the pinned version, or drop the entry from skills.lock.json to keep yours)",
			name, root, st.Dir, name)
	}
	reg, err := skills.Scan(ctx, skills.ScanOptions{Roots: []string{root}})
	if err != nil {
		return err
	}
	if sk, ok := reg.Lookup(name); ok && VersionOf(sk) == h.Current {
		return nil
	}
	return outcome.Policy("install_unmanaged", "%s in %s is not the version %s the skill store made live there (it was changed by hand): skills.lock.json's entry for %s will not replace it; nothing was installed (move the directory away, or harness skills rollback %s to put the stored version back)",
		name, root, short(h.Current), name, name)
}

func pathOrTop(p string) string {
	if p == "" {
		return "the top of the tree"
	}
	return p
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
			key := pin.URL + "\n" + pin.Commit
			repo, ok := repos[key]
			if !ok {
				var done func()
				if repo, done, err = fetch(ctx, o.Root, pin.URL, pin.Ref, pin.Commit); err != nil {
					return nil, err
				}
				defer done()
				repos[key] = repo
			}
			if !repo.Has(pin.Commit) {
				return nil, outcome.Failed("install_commit_gone", "%s pins %s of %s, which the repository no longer holds (the ref %q moved and nothing left in it reaches that commit): `harness skills update %s` takes what the ref names now", name, shortCommit(pin.Commit), pin.URL, pin.Ref, name)
			}
			in, err := addPinned(ctx, o, repo, name, pin, pin.Commit, map[string]LockEntry{name: e})
			if err != nil {
				return nil, err
			}
			out.Skills = append(out.Skills, AddedSkill{Name: name, Commit: pin.Commit, Installed: in})
		}
		if now, err := gitsource.RemoteRef(ctx, pin.URL, pin.Ref); err == nil && now != "" && now != pin.Commit {
			out.Moved = append(out.Moved, RefMove{Skill: name, URL: pin.URL, Ref: pin.Ref, Pinned: pin.Commit, Now: now})
		}
	}
	return out, nil
}

// fetch fetches the commit ref names (or commit, when given: what a
// lock pinned when ref named it) from u into a staging directory of root
// (held, so that a concurrent install's sweep of stale stages leaves it
// alone), removed when done is called: only that commit, within
// gitsource.DefaultLimits.
func fetch(ctx context.Context, root, u, ref, commit string) (*gitsource.Repo, func(), error) {
	dir, done, err := newStage(root)
	if err != nil {
		return nil, nil, err
	}
	// A CI job must not hang on a server that stops sending; what was
	// fetched is read from disk afterwards, outside this bound.
	ctx, cancel := context.WithTimeout(ctx, FetchTimeout)
	defer cancel()
	var repo *gitsource.Repo
	if commit != "" {
		repo, err = gitsource.FetchCommit(ctx, u, ref, commit, filepath.Join(dir, "repo.git"), gitsource.DefaultLimits())
	} else {
		repo, err = gitsource.Fetch(ctx, u, ref, filepath.Join(dir, "repo.git"), gitsource.DefaultLimits())
	}
	if err != nil {
		done()
		return nil, nil, fetchError(err)
	}
	return repo, done, nil
}

// fetchError is the refusal a failed fetch is.
func fetchError(err error) error {
	var re *gitsource.RefError
	var le *gitsource.LimitError
	switch {
	case errors.As(err, &re):
		return &outcome.Error{Code: "install_ref_unknown", Msg: err.Error(), Exit: outcome.ExitUsage, Err: err}
	case errors.As(err, &le):
		return &outcome.Error{Code: "source_too_large", Msg: err.Error() + "; nothing was installed", Exit: outcome.ExitPolicy, Err: err}
	}
	return &outcome.Error{Code: "source_unreachable", Msg: err.Error() + "; check the URL, the network and your git credentials", Exit: outcome.ExitProvider, Err: err}
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
		return outcome.Policy("install_source_untrusted", "%s is not a trusted source (trusted now: %s); to trust it, add a URL prefix of it, such as %s, to skills.trustedSources in the config file", what, listOrNone(prefixes), parentURL(u))
	}
	return nil
}

// parentURL is u's parent directory, the prefix that trusts u and its
// siblings (an owner's repositories), without credentials, query or
// fragment.
func parentURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	p.User, p.RawQuery, p.Fragment, p.RawPath = nil, "", "", ""
	p.Path = strings.TrimSuffix(path.Dir(strings.TrimSuffix(p.Path, "/")), "/") + "/"
	return p.String()
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
		var be *gitsource.BlobError
		switch {
		case errors.As(err, &oe):
			return err
		case errors.As(err, &be):
			return &outcome.Error{Code: "source_too_large", Msg: err.Error() + "; nothing was installed", Exit: outcome.ExitPolicy, Err: err}
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

func shortCommit(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}
