// Package store installs skills into a skills root: trusted sources only,
// unpacked through a root that nothing can escape, validated strictly,
// content-scanned, and renamed into place whole; skills.lock.json records
// what was installed from where.
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

// Bounds on what an install may bring in.
const (
	maxInstallEntries = 2000
	maxInstallBytes   = 100 << 20
	fileSkillsLock    = "skills.lock.json"
)

// InstallOptions are `harness skills install`.
type InstallOptions struct {
	Source         string   // a skill directory, or a .tar.gz/.tgz/.zip archive holding one
	Root           string   // the skills root to install into
	TrustedSources []string // path prefixes sources must lie under
	Force          bool     // replace an installed skill of the same name
	AllowRisky     bool     // install despite critical content findings
	Store          *Store   // where every installed version is kept
	Now            func() time.Time
}

// Installed reports a finished install.
type Installed struct {
	Name         string
	Dir          string
	Digest       artifacts.Digest
	Findings     []record.Finding
	InstallHints []string
	// Version is the store's version of it, Parent the version it
	// replaced ("" for a first install).
	Version, Parent artifacts.Digest
}

// SkillsLock is skills.lock.json at a skills root: what was installed,
// from where, with what content.
type SkillsLock struct {
	artifacts.Envelope
	Skills map[string]LockEntry `json:"skills"`
}

// LockEntry is one installed skill.
type LockEntry struct {
	Source      string           `json:"source"`
	TreeDigest  artifacts.Digest `json:"treeDigest"`
	SkillDigest artifacts.Digest `json:"skillDigest"`
	InstalledAt time.Time        `json:"installedAt"`
	Findings    []record.Finding `json:"findings"`
}

// Install copies a skill into a root without letting a malicious one
// in: the source must be trusted, the tree is unpacked into a staging
// directory inside the root (archive entries that escape, links that
// leave the skill, device files and oversize trees are refused), validated
// strictly and content-scanned there, and only then renamed into place.
// An interrupted install leaves the root as it was.
func Install(ctx context.Context, o InstallOptions) (*Installed, error) {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	src, err := filepath.Abs(o.Source)
	if err != nil {
		return nil, outcome.Usage("install_source_invalid", "%s: %v", o.Source, err)
	}
	if !trusted(src, o.TrustedSources) {
		return nil, outcome.Policy("install_source_untrusted", "%s is not under a trusted source; add its directory to skills.trustedSources in the --config file (trusted now: %s)", o.Source, listOrNone(o.TrustedSources))
	}
	root, err := filepath.Abs(o.Root)
	if err != nil {
		return nil, outcome.Usage("install_root_invalid", "--to %s: %v", o.Root, err)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, outcome.Usage("install_root_invalid", "--to %s: %v", o.Root, err)
	}
	removeStaleStages(root)
	stage, err := os.MkdirTemp(root, stagePrefix)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(stage)
	held, err := holdStage(stage)
	if err != nil {
		return nil, err
	}
	defer held.Close()
	tree := filepath.Join(stage, "skill")
	if err := unpack(src, tree); err != nil {
		return nil, err
	}
	// The skill is the unpacked directory holding SKILL.md, at the top or
	// one level down (archives usually wrap a directory).
	dir, err := skillDirIn(tree)
	if err != nil {
		return nil, err
	}
	// The installed directory is named after the skill, whatever the
	// source directory or archive was called: rename before validating.
	if pre, err := skills.Validate(ctx, dir, skills.ValidateOptions{}); err == nil && len(pre.Skills) == 1 && pre.Skills[0].Name != "" &&
		skills.ValidName(pre.Skills[0].Name) && filepath.Base(dir) != pre.Skills[0].Name {
		named := filepath.Join(stage, "named", pre.Skills[0].Name)
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
		return nil, outcome.Usage("install_invalid", "validate %s: %v", o.Source, err)
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
		return nil, outcome.Failed("install_invalid", "%s is not a valid skill: %s", o.Source, strings.Join(msgs, "; "))
	}
	name := val.Skills[0].Name
	reg, err := skills.Scan(ctx, skills.ScanOptions{Roots: []string{filepath.Dir(dir)}})
	if err != nil {
		return nil, err
	}
	s, ok := reg.Lookup(name)
	if !ok {
		return nil, outcome.Failed("install_invalid", "%s does not load as a skill", o.Source)
	}
	findings := audit.Skill(s)
	for i := range findings {
		findings[i].Path = strings.TrimPrefix(findings[i].Path, dir+"/")
	}
	if slices.ContainsFunc(findings, func(f record.Finding) bool { return f.Severity == cfc.SeverityCritical }) && !o.AllowRisky {
		var rules []string
		for _, f := range findings {
			if f.Severity == cfc.SeverityCritical {
				rules = append(rules, fmt.Sprintf("%s (%s:%d)", f.Rule, f.Path, f.Line))
			}
		}
		return nil, outcome.Policy("install_risky", "%s has critical findings: %s; nothing was installed (review it, then --allow-risky to install anyway)", o.Source, strings.Join(rules, ", "))
	}
	dest := filepath.Join(root, name)
	if _, err := os.Lstat(dest); err == nil && !o.Force {
		return nil, outcome.Usage("install_exists", "a skill named %s is already installed at %s: pass --force to replace it", name, dest)
	}
	// Into place through the store: kept as a version, then exchanged
	// with the live copy atomically.
	if o.Store == nil {
		return nil, errors.New("install: no skill store")
	}
	assessed := audit.Assess(s)
	if assessed.PermissionsError != "" {
		return nil, outcome.Failed("install_invalid", "%s: %s; nothing was installed", o.Source, assessed.PermissionsError)
	}
	v, err := o.Store.Put(ctx, PutRequest{Name: name, Dir: dir, Root: root, Actor: record.Actor{Kind: "operator", Command: "harness skills install"},
		Risk: assessed.Risk, Findings: findings, Source: src, Event: record.SkillInstalled})
	if err != nil {
		return nil, err
	}
	in := &Installed{Name: name, Dir: dest, Digest: s.TreeDigest, Findings: findings, InstallHints: s.InstallHints, Version: v.Version, Parent: v.Parent}
	if in.Findings == nil {
		in.Findings = []record.Finding{}
	}
	lock := SkillsLock{Envelope: artifacts.NewEnvelope("harness.skills-lock", 1), Skills: map[string]LockEntry{}}
	lockPath := filepath.Join(root, fileSkillsLock)
	if err := artifacts.ReadJSON(lockPath, "harness.skills-lock", 1, &lock); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return in, fmt.Errorf("read %s: %w", lockPath, err)
	}
	if lock.Skills == nil {
		lock.Skills = map[string]LockEntry{}
	}
	lock.Skills[name] = LockEntry{Source: src, TreeDigest: s.TreeDigest, SkillDigest: s.Digest, InstalledAt: now().UTC(), Findings: in.Findings}
	return in, artifacts.WriteJSON(lockPath, &lock)
}

func trusted(src string, prefixes []string) bool {
	for _, p := range prefixes {
		abs, err := filepath.Abs(p)
		if err == nil && (src == abs || strings.HasPrefix(src, abs+string(filepath.Separator))) {
			return true
		}
	}
	return false
}

func listOrNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}

func skillDirIn(tree string) (string, error) {
	if fi, err := os.Stat(filepath.Join(tree, "SKILL.md")); err == nil && fi.Mode().IsRegular() {
		return tree, nil
	}
	entries, _ := os.ReadDir(tree)
	if len(entries) == 1 && entries[0].IsDir() {
		d := filepath.Join(tree, entries[0].Name())
		if fi, err := os.Stat(filepath.Join(d, "SKILL.md")); err == nil && fi.Mode().IsRegular() {
			return d, nil
		}
	}
	return "", outcome.Usage("install_invalid", "no SKILL.md at the top of the source (or of its single top directory)")
}
