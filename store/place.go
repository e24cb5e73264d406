package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/audit"
	"github.com/harness-dev/harness/cfc"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/skills"
)

// placement is one staged skill directory going into a root through the
// store: validated strictly, scanned, kept as a version, made live (or
// left pending) and recorded in the root's skills.lock.json.
type placement struct {
	Dir   string // the staged skill directory
	Stage string // the stage it lies in (a renamed copy goes there too)
	// Source is what the lock and the store record; Shown is how messages
	// name it.
	Source, Shown string
	Root          string
	Store         *Store
	// Force replaces an installed skill of the same name; Replaces says
	// which installed skills may be replaced without it (those from the
	// same source).
	Force      bool
	Replaces   func(LockEntry) bool
	AllowRisky bool
	// Approve, when set, leaves a version above its tier pending (and,
	// with Held, one whose risk or permissions grew over the live one's).
	Approve *Approval
	Held    func(live *LockEntry, risk skills.Risk, perms *skills.Permissions) bool
	Git     *GitPin
	// Want, when it names the skill, is the entry whose digests it must
	// have (an install from the lock).
	Want map[string]LockEntry
	// Version, when set, is the version the skill must be (an install
	// from an index that names it).
	Version artifacts.Digest
	// DryRun stops before anything is kept or made live: the result says
	// what would happen.
	DryRun  bool
	Command string
	Now     func() time.Time
}

func place(ctx context.Context, p placement) (*Installed, error) {
	dir := p.Dir
	// The installed directory is named after the skill, whatever the
	// source directory or archive was called: rename before validating.
	if pre, err := skills.Validate(ctx, dir, skills.ValidateOptions{}); err == nil && len(pre.Skills) == 1 && pre.Skills[0].Name != "" &&
		skills.ValidName(pre.Skills[0].Name) && filepath.Base(dir) != pre.Skills[0].Name {
		named := filepath.Join(p.Stage, "named", pre.Skills[0].Name)
		if err := os.MkdirAll(filepath.Dir(named), 0o755); err != nil {
			return nil, err
		}
		if err := os.Rename(dir, named); err != nil {
			return nil, err
		}
		dir = named
	}
	val, err := skills.Validate(ctx, dir, skills.ValidateOptions{Strict: true})
	if err != nil {
		return nil, outcome.Usage("install_invalid", "validate %s: %v", p.Shown, err)
	}
	if val.HasErrors() || len(val.Skills) != 1 {
		var msgs []string
		for _, s := range val.Skills {
			for _, d := range s.Diagnostics {
				if d.Severity == skills.SeverityError {
					msgs = append(msgs, d.Detail)
				}
			}
		}
		return nil, outcome.Failed("install_invalid", "%s is not a valid skill: %s", p.Shown, strings.Join(msgs, "; "))
	}
	name := val.Skills[0].Name
	reg, err := skills.Scan(ctx, skills.ScanOptions{Roots: []string{filepath.Dir(dir)}})
	if err != nil {
		return nil, err
	}
	s, ok := reg.Lookup(name)
	if !ok {
		return nil, outcome.Failed("install_invalid", "%s does not load as a skill", p.Shown)
	}
	findings := audit.Skill(s)
	for i := range findings {
		findings[i].Path = strings.TrimPrefix(findings[i].Path, dir+"/")
	}
	if slices.ContainsFunc(findings, func(f record.Finding) bool { return f.Severity == cfc.SeverityCritical }) && !p.AllowRisky {
		var rules []string
		for _, f := range findings {
			if f.Severity == cfc.SeverityCritical {
				rules = append(rules, fmt.Sprintf("%s (%s:%d)", f.Rule, f.Path, f.Line))
			}
		}
		return nil, outcome.Policy("install_risky", "%s has critical findings: %s; nothing was installed (review it, then --allow-risky to install anyway)", p.Shown, strings.Join(rules, ", "))
	}
	if _, ok := p.Want[name]; p.Want != nil && !ok {
		return nil, outcome.Policy("install_pin_mismatch", "%s from %s is not a skill skills.lock.json pins there; nothing was installed", name, p.Shown)
	}
	if want, ok := p.Want[name]; ok && (want.TreeDigest != s.TreeDigest || want.SkillDigest != s.Digest) {
		return nil, outcome.Policy("install_digest_mismatch", "%s from %s is not the content skills.lock.json pins (SKILL.md %s, resources %s; pinned %s, %s); nothing was installed",
			name, p.Shown, s.Digest, s.TreeDigest, want.SkillDigest, want.TreeDigest)
	}
	if p.Version != "" && s.Version() != p.Version {
		return nil, outcome.Policy("install_digest_mismatch", "%s from %s is not the version asked for (it is %s; asked for %s); nothing was installed", name, p.Shown, s.Version(), p.Version)
	}
	lock, err := ReadLock(p.Root)
	if err != nil {
		return nil, err
	}
	live, hasLive := lock.Skills[name]
	dest := filepath.Join(p.Root, name)
	if _, err := os.Lstat(dest); err == nil && !p.Force && (p.Replaces == nil || !hasLive || !p.Replaces(live)) {
		return nil, outcome.Usage("install_exists", "a skill named %s is already installed at %s: pass --force to replace it", name, dest)
	}
	if p.Store == nil {
		return nil, errors.New("install: no skill store")
	}
	assessed := audit.Assess(s)
	if assessed.PermissionsError != "" {
		return nil, outcome.Failed("install_invalid", "%s: %s; nothing was installed", p.Shown, assessed.PermissionsError)
	}
	pending := false
	if p.Approve != nil {
		var was *LockEntry
		if hasLive {
			was = &live
		}
		pending = !p.Approve.Auto(assessed.Risk) || p.Held != nil && p.Held(was, assessed.Risk, assessed.Permissions)
		// The lock pins what was live: a version this store already made
		// live in this root (a person approved it, or its tier did) comes
		// back from the lock without asking again.
		if pending && p.Want != nil {
			pending = !p.Store.wasLive(name, s.Version(), p.Root)
		}
	}
	if p.DryRun {
		in := &Installed{Name: name, Dir: dest, Digest: s.TreeDigest, Findings: findings, InstallHints: s.InstallHints,
			Risk: assessed.Risk, Permissions: assessed.Permissions, Pending: pending, Changes: diffTrees(dest, dir)}
		return in, nil
	}
	changes := diffTrees(dest, dir)
	if findings == nil {
		findings = []record.Finding{}
	}
	risk := assessed.Risk
	// The store writes the entry into the lock when the version goes
	// live: now, or when a person approves it (the live copy, and so the
	// lock, stay as they were while it is pending).
	entry := &LockEntry{Source: p.Source, TreeDigest: s.TreeDigest, SkillDigest: s.Digest, InstalledAt: p.Now().UTC(), Findings: findings,
		Git: p.Git, Risk: &risk, Permissions: assessed.Permissions}
	v, err := p.Store.Put(ctx, PutRequest{Name: name, Dir: dir, Root: p.Root, Actor: record.Actor{Kind: "operator", Command: p.Command},
		Risk: assessed.Risk, Findings: findings, Source: p.Source, Event: record.SkillInstalled, Pending: pending, Lock: entry})
	if err != nil {
		return nil, err
	}
	return &Installed{Name: name, Dir: dest, Digest: s.TreeDigest, Findings: findings, InstallHints: s.InstallHints, Version: v.Version, Parent: v.Parent,
		Risk: assessed.Risk, Permissions: assessed.Permissions, Pending: pending, Changes: changes}, nil
}

// ReadLock reads root's skills.lock.json (empty when there is none).
func ReadLock(root string) (*SkillsLock, error) {
	lock := &SkillsLock{Envelope: artifacts.NewEnvelope("harness.skills-lock", 1), Skills: map[string]LockEntry{}}
	lockPath := filepath.Join(root, fileSkillsLock)
	if err := artifacts.ReadJSON(lockPath, "harness.skills-lock", 1, lock); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read %s: %w", lockPath, err)
	}
	if lock.Skills == nil {
		lock.Skills = map[string]LockEntry{}
	}
	return lock, nil
}

// FileChanges are the files a new version adds, removes and changes
// against the live copy (slash paths).
type FileChanges struct {
	Added, Removed, Changed []string
}

// diffTrees compares the regular files and links of the live skill at
// live with those of dir; nil when there is no live copy.
func diffTrees(live, dir string) *FileChanges {
	if _, err := os.Lstat(live); err != nil {
		return nil
	}
	was, now := fileDigests(live), fileDigests(dir)
	c := &FileChanges{}
	for name, d := range now {
		switch w, ok := was[name]; {
		case !ok:
			c.Added = append(c.Added, name)
		case w != d:
			c.Changed = append(c.Changed, name)
		}
	}
	for name := range was {
		if _, ok := now[name]; !ok {
			c.Removed = append(c.Removed, name)
		}
	}
	slices.Sort(c.Added)
	slices.Sort(c.Removed)
	slices.Sort(c.Changed)
	return c
}

func fileDigests(dir string) map[string]artifacts.Digest {
	out := map[string]artifacts.Digest{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			t, _ := os.Readlink(p)
			out[filepath.ToSlash(rel)] = artifacts.DigestString("link:" + t)
		case d.Type().IsRegular():
			if f, err := os.Open(p); err == nil {
				dg, _, _ := artifacts.DigestReader(f)
				f.Close()
				out[filepath.ToSlash(rel)] = dg
			}
		}
		return nil
	})
	return out
}
