package store

// Keeping skills added from git current: which pins moved, and taking a
// skill to where its ref points now.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/harness-dev/harness/gitsource"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/skills"
)

// Outdated lists the git-pinned skills of root whose ref names another
// commit now, asking only URLs under trusted (as trustSource judges).
func Outdated(ctx context.Context, root string, names, trusted []string) ([]RefMove, error) {
	lock, err := ReadLock(root)
	if err != nil {
		return nil, err
	}
	var out []RefMove
	for _, name := range sortedGit(lock, names) {
		pin := lock.Skills[name].Git
		// Outdated installs nothing, but asking a server about refs is a
		// request harness makes on the lock's word: a hand-edited lock
		// must not point it at any host (from CI, a probe of the inside
		// network), so it asks only what add and update would fetch.
		if err := trustSource(pin.URL, name, trusted); err != nil {
			return nil, err
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
		// One fetch per URL and ref: each brings only what its ref names.
		key := pin.URL + "\n" + pin.Ref
		repo, ok := repos[key]
		if !ok {
			var done func()
			if repo, done, err = fetch(ctx, root, pin.URL, pin.Ref, ""); err != nil {
				var oe *outcome.Error
				if errors.As(err, &oe) && oe.Code == "install_ref_unknown" {
					oe.Msg = name + ": " + oe.Msg
				}
				return nil, err
			}
			defer done()
			repos[key] = repo
		}
		commit := repo.Commit
		u := Updated{Name: name, URL: pin.URL, Ref: pin.Ref, From: pin.Commit, To: commit, RiskBefore: e.Risk, DryRun: o.DryRun}
		if commit == pin.Commit {
			u.UpToDate = true
			out = append(out, u)
			continue
		}
		in, err := addPinned(ctx, AddOptions{Root: root, Approve: o.Approve, AllowRisky: o.AllowRisky, Store: o.Store, Now: o.Now, dryRun: o.DryRun},
			repo, name, pin, commit, nil)
		if err != nil {
			return nil, err
		}
		u.Installed = in
		u.NewPermissions = NewPermissions(e.Permissions, in.Permissions)
		out = append(out, u)
	}
	return out, nil
}
