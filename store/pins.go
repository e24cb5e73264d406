package store

// The lock follows what is live: each version kept carries its lock entry,
// written when it is made live and dropped when it is removed.

import (
	"context"
	"path/filepath"
	"slices"
	"time"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/skills"
)

// pinnedNow is e as it is written when its version goes live at t.
func pinnedNow(e *LockEntry, t time.Time) *LockEntry {
	if e == nil {
		return nil
	}
	c := *e
	c.InstalledAt = t
	return &c
}

// pin makes the root's skills.lock.json follow version v, just made
// live: its entry e, or, for a version kept without one, no entry at all,
// unless the one there already pins exactly v's content (a version kept
// before the store kept entries). A lock that pinned anything else would
// have add from the lock put the old version back, and outdated and
// update judge a commit that is no longer live.
func (s *Store) pin(ctx context.Context, h *record.SkillHistory, v artifacts.Digest, e *LockEntry) error {
	lock, err := ReadLock(h.Root)
	if err != nil {
		return err
	}
	if e != nil {
		lock.Skills[h.Name] = *e
		return artifacts.WriteJSON(filepath.Join(h.Root, fileSkillsLock), lock)
	}
	was, ok := lock.Skills[h.Name]
	if !ok {
		return nil
	}
	reg, err := skills.Scan(ctx, skills.ScanOptions{Roots: []string{s.versionDir(h.Name, v)}})
	if err != nil {
		return err
	}
	if sk, ok := reg.Lookup(h.Name); ok && sk.TreeDigest == was.TreeDigest && sk.Digest == was.SkillDigest {
		return nil
	}
	return s.unpin(h)
}

// unpin drops the skill's entry from the root's skills.lock.json: what
// is live there no longer comes from what it pinned.
func (s *Store) unpin(h *record.SkillHistory) error {
	lock, err := ReadLock(h.Root)
	if err != nil {
		return err
	}
	if _, ok := lock.Skills[h.Name]; !ok {
		return nil
	}
	delete(lock.Skills, h.Name)
	return artifacts.WriteJSON(filepath.Join(h.Root, fileSkillsLock), lock)
}

// wasLive reports whether version v of name was ever live in root by
// this store: approved by a person or by its tier, not pending or
// rejected.
func (s *Store) wasLive(name string, v artifacts.Digest, root string) bool {
	h, err := s.History(name)
	if err != nil || h.Root != root {
		return false
	}
	return slices.ContainsFunc(h.Versions, func(sv record.SkillVersion) bool {
		return sv.Version == v && sv.State != record.VersionPending && sv.State != record.VersionRejected
	})
}
