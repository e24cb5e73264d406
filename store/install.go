// Package store installs skills into a skills root: trusted sources only,
// unpacked through a root that nothing can escape, validated strictly,
// content-scanned, and renamed into place whole; skills.lock.json records
// what was installed from where.
package store

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/harness-dev/harness/artifacts"
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
	Risk            skills.Risk
	Permissions     *skills.Permissions
	// Pending says the version waits for harness skills approve: the live
	// copy is the one before.
	Pending bool
	// Changes are the files it changes against the live copy (nil for a
	// first install).
	Changes *FileChanges
}

// SkillsLock is skills.lock.json at a skills root: what was installed,
// from where, with what content.
type SkillsLock struct {
	artifacts.Envelope
	Skills map[string]LockEntry `json:"skills"`
}

// LockEntry is one installed skill (record.SkillLockEntry is its schema).
type LockEntry = record.SkillLockEntry

// GitPin is where a skill came from in a git repository.
type GitPin = record.GitPin

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
		return nil, outcome.Policy("install_source_untrusted", "%s is not under a trusted source (trusted now: %s); to trust it, add its directory, %s, to skills.trustedSources in the config file", o.Source, listOrNone(o.TrustedSources), filepath.Dir(src))
	}
	root, err := filepath.Abs(o.Root)
	if err != nil {
		return nil, outcome.Usage("install_root_invalid", "--to %s: %v", o.Root, err)
	}
	stage, done, err := newStage(root)
	if err != nil {
		return nil, err
	}
	defer done()
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
	return place(ctx, placement{Dir: dir, Stage: stage, Source: src, Shown: o.Source, Root: root, Store: o.Store,
		Force: o.Force, AllowRisky: o.AllowRisky, Command: "harness skills install", Now: now})
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
