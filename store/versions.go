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
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/skills"
)

// DefaultStoreDir is where the store lives unless --store says otherwise.
const DefaultStoreDir = ".harness/skills-store"

// Store keeps every version of every skill that became (or asked to
// become) live: an immutable copy named by its tree digest, the skill's
// history, and the audit log. The live root holds only the current
// version; every change to it goes through here.
type Store struct {
	Dir string
	// Key seals audit lines (HARNESS_RUN_KEY); nil leaves them chained
	// but unsealed.
	Key []byte
	Now func() time.Time
	// beforeSwap runs after a version is staged in the live root and
	// verified, just before it replaces the live copy: tests kill the
	// process here.
	beforeSwap func()
}

// Open prepares a store directory.
func Open(dir string, key []byte) (*Store, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(abs, record.DirSkillVersions), 0o755); err != nil {
		return nil, outcome.Usage("store_invalid", "--store %s: %v", dir, err)
	}
	return &Store{Dir: abs, Key: key, Now: time.Now}, nil
}

// begin takes the store lock and checks the audit log before anything
// changes: a change is never made that could not be recorded on a chain
// that verifies.
func (s *Store) begin() (func(), error) {
	unlock, err := s.lock()
	if err != nil {
		return nil, err
	}
	if _, _, err := readAudit(s.Dir, s.Key); err != nil {
		unlock()
		return nil, auditBroken(err, s.Dir)
	}
	return unlock, nil
}

// edit begins a change to one skill: the store locked, the audit log
// verified, the skill's history read.
func (s *Store) edit(name string) (*record.SkillHistory, func(), error) {
	unlock, err := s.begin()
	if err != nil {
		return nil, nil, err
	}
	h, err := s.History(name)
	if err != nil {
		unlock()
		return nil, nil, err
	}
	return h, unlock, nil
}

// lock serializes changes to the store across processes.
func (s *Store) lock() (func(), error) {
	f, err := os.OpenFile(filepath.Join(s.Dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}

func (s *Store) now() time.Time { return s.Now().UTC() }

func (s *Store) skillDir(name string) string {
	return filepath.Join(s.Dir, record.DirSkillVersions, name)
}

// versionDir is where a version's tree lives: <digest-hex>/<name>/, a
// directory that scans as a root holding exactly that skill.
func (s *Store) versionDir(name string, v artifacts.Digest) string {
	return filepath.Join(s.skillDir(name), strings.TrimPrefix(string(v), "blake3:"))
}

// History reads a skill's history; a skill the store never saw has an
// empty one.
func (s *Store) History(name string) (*record.SkillHistory, error) {
	if !skills.ValidName(name) {
		return nil, outcome.Usage("skill_name_invalid", "%q is not a skill name", name)
	}
	h := &record.SkillHistory{Envelope: artifacts.NewEnvelope(record.TypeSkillHistory, record.SkillStoreVersion), Name: name, Versions: []record.SkillVersion{}}
	err := artifacts.ReadJSON(filepath.Join(s.skillDir(name), record.FileSkillHistory), record.TypeSkillHistory, record.SkillStoreVersion, h)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return h, nil
}

func (s *Store) writeHistory(h *record.SkillHistory) error {
	return artifacts.WriteJSON(filepath.Join(s.skillDir(h.Name), record.FileSkillHistory), h)
}

// PutRequest adds a version of a skill.
type PutRequest struct {
	Name string
	// Dir is the skill directory to store (validated by the caller).
	Dir string
	// Root is the live skills root it goes into.
	Root     string
	Actor    record.Actor
	Risk     skills.Risk
	Findings []record.Finding
	Source   string
	// Pending stores the version without making it live: it waits for
	// Decide.
	Pending bool
	// Event is the audit step: installed or promoted (pending is its own).
	Event string
	// Eval is what the version's own evals came to against a gate (a
	// SkillForge draft's), kept with it for whoever decides on it.
	Eval *record.SkillEval
	// Lock is the root's skills.lock.json entry for this version: kept
	// with it, and written when it goes live (now, or when approved or
	// rolled back to). Nil for a version no entry describes.
	Lock *LockEntry
}

// Put stores a version (once per digest) and, unless pending, makes it
// the live copy atomically.
func (s *Store) Put(ctx context.Context, r PutRequest) (record.SkillVersion, error) {
	h, unlock, err := s.edit(r.Name)
	if err != nil {
		return record.SkillVersion{}, err
	}
	defer unlock()
	digest, err := s.keep(ctx, r.Name, r.Dir)
	if err != nil {
		return record.SkillVersion{}, err
	}
	root, err := filepath.Abs(r.Root)
	if err != nil {
		return record.SkillVersion{}, err
	}
	h.Root = root
	v := record.SkillVersion{Version: digest, Parent: h.Current, State: record.VersionLive, MadeBy: r.Actor, CreatedAt: s.now(),
		Source: r.Source, Risk: r.Risk.String(), Findings: r.Findings, Lock: r.Lock, Eval: r.Eval}
	if v.Findings == nil {
		v.Findings = []record.Finding{}
	}
	event := r.Event
	if r.Pending {
		v.State, event = record.VersionPending, record.SkillPending
	} else {
		if err := s.makeLive(ctx, h, digest); err != nil {
			return record.SkillVersion{}, err
		}
		s.supersede(h, digest)
	}
	h.Versions = append(h.Versions, v)
	if err := s.writeHistory(h); err != nil {
		return v, err
	}
	if !r.Pending {
		if err := s.pin(ctx, h, digest, r.Lock); err != nil {
			return v, err
		}
	}
	ev := record.SkillAuditEvent{Skill: r.Name, Version: digest, Parent: v.Parent, Actor: r.Actor, Risk: v.Risk, Detail: r.Source}
	if r.Eval != nil && !r.Eval.Met {
		ev.Reason = r.Eval.Reason
	}
	return v, s.appendAudit(event, ev)
}

// keep copies a skill directory into the store under its tree digest and
// returns the digest; a version already kept is not copied again.
func (s *Store) keep(ctx context.Context, name, dir string) (artifacts.Digest, error) {
	tmp, err := os.MkdirTemp(s.Dir, ".incoming-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if err := unpack(dir, filepath.Join(tmp, name)); err != nil {
		return "", err
	}
	digest, err := treeDigest(ctx, tmp, name)
	if err != nil {
		return "", err
	}
	dest := s.versionDir(name, digest)
	if _, err := os.Stat(dest); err == nil {
		return digest, nil
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, dest); err != nil {
		return "", err
	}
	return digest, artifacts.SyncDir(filepath.Dir(dest))
}

// treeDigest scans root (which must hold exactly the skill name) and
// returns the digest that names a version: SKILL.md and every resource
// (the registry's Digest and TreeDigest, the latter covering resources
// only), so any byte changed anywhere in the skill is a new version.
func treeDigest(ctx context.Context, root, name string) (artifacts.Digest, error) {
	reg, err := skills.Scan(ctx, skills.ScanOptions{Roots: []string{root}})
	if err != nil {
		return "", err
	}
	sk, ok := reg.Lookup(name)
	if !ok {
		return "", outcome.Failed("store_invalid", "%s does not load as the skill %s", root, name)
	}
	return VersionOf(sk), nil
}

// makeLive replaces the live copy of a skill with a stored version. The
// version is copied into a staging directory inside the live root, its
// digest checked again (a store edited by hand is refused), and then
// exchanged with the live directory in one renameat2(RENAME_EXCHANGE): at
// every instant the live root holds either the old version or the new
// one, whatever happens to this process.
func (s *Store) makeLive(ctx context.Context, h *record.SkillHistory, v artifacts.Digest) error {
	if err := os.MkdirAll(h.Root, 0o755); err != nil {
		return outcome.Usage("install_root_invalid", "%s: %v", h.Root, err)
	}
	removeStaleStages(h.Root)
	stage, err := os.MkdirTemp(h.Root, stagePrefix)
	if err != nil {
		return err
	}
	defer os.RemoveAll(stage)
	held, err := holdStage(stage)
	if err != nil {
		return err
	}
	defer held.Close()
	if err := unpack(filepath.Join(s.versionDir(h.Name, v), h.Name), filepath.Join(stage, h.Name)); err != nil {
		return err
	}
	got, err := treeDigest(ctx, stage, h.Name)
	if err != nil {
		return err
	}
	if got != v {
		return outcome.Failed("store_version_changed", "the stored version %s of %s no longer has that digest (it is %s): the store was changed outside harness; nothing was changed in %s", v, h.Name, got, h.Root)
	}
	if s.beforeSwap != nil {
		s.beforeSwap()
	}
	return swapInto(filepath.Join(stage, h.Name), filepath.Join(h.Root, h.Name))
}

// swapInto puts dir at dest atomically: exchanged with what is there, or
// renamed in when nothing is. What was there ends up at dir.
func swapInto(dir, dest string) error {
	err := unix.Renameat2(unix.AT_FDCWD, dir, unix.AT_FDCWD, dest, unix.RENAME_EXCHANGE)
	if errors.Is(err, unix.ENOENT) {
		err = unix.Renameat2(unix.AT_FDCWD, dir, unix.AT_FDCWD, dest, unix.RENAME_NOREPLACE)
	}
	if err != nil {
		return fmt.Errorf("put %s in place: %w", dest, err)
	}
	return artifacts.SyncDir(filepath.Dir(dest))
}

// Decide approves or rejects a pending version (the newest pending one
// when version is empty). An approved version becomes live.
func (s *Store) Decide(ctx context.Context, name, version string, approve bool, reason string, actor record.Actor) (record.SkillVersion, error) {
	h, unlock, err := s.edit(name)
	if err != nil {
		return record.SkillVersion{}, err
	}
	defer unlock()
	i, err := find(h, version, func(v record.SkillVersion) bool { return v.State == record.VersionPending }, "pending")
	if err != nil {
		return record.SkillVersion{}, err
	}
	v := &h.Versions[i]
	if v.State != record.VersionPending {
		return record.SkillVersion{}, outcome.Usage("skill_not_pending", "%s@%s is %s, not pending", name, short(v.Version), v.State)
	}
	now := s.now()
	v.DecidedAt, v.DecidedBy, v.Reason = &now, &actor, reason
	event := record.SkillRejected
	if approve {
		event = record.SkillApproved
		v.Parent = h.Current
		if err := s.makeLive(ctx, h, v.Version); err != nil {
			return *v, err
		}
		s.supersede(h, v.Version)
		v.State = record.VersionLive
	} else {
		v.State = record.VersionRejected
	}
	if err := s.writeHistory(h); err != nil {
		return *v, err
	}
	if approve {
		if err := s.pin(ctx, h, v.Version, pinnedNow(v.Lock, now)); err != nil {
			return *v, err
		}
	}
	return *v, s.appendAudit(event, record.SkillAuditEvent{Skill: name, Version: v.Version, Parent: v.Parent, Actor: actor, Risk: v.Risk, Reason: reason})
}

// supersede marks the live version (if any) superseded and makes v
// current.
func (s *Store) supersede(h *record.SkillHistory, v artifacts.Digest) {
	for i := range h.Versions {
		if h.Versions[i].State == record.VersionLive && h.Versions[i].Version != v {
			h.Versions[i].State = record.VersionSuperseded
		}
	}
	h.Current = v
}

// Rollback makes an earlier version live again: the one named, or by
// default the one the current version replaced.
func (s *Store) Rollback(ctx context.Context, name, version string, actor record.Actor) (record.SkillVersion, error) {
	h, unlock, err := s.edit(name)
	if err != nil {
		return record.SkillVersion{}, err
	}
	defer unlock()
	if version == "" && h.Current == "" {
		// Removed: rolling back brings back what was live when it was
		// removed, as remove promises.
		for i := len(h.Versions) - 1; i >= 0 && version == ""; i-- {
			if h.Versions[i].State == record.VersionRemoved {
				version = string(h.Versions[i].Version)
			}
		}
	}
	if version == "" {
		cur := slices.IndexFunc(h.Versions, func(v record.SkillVersion) bool { return v.Version == h.Current && v.State == record.VersionLive })
		if cur < 0 || h.Versions[cur].Parent == "" {
			return record.SkillVersion{}, outcome.Usage("skill_no_previous", "%s has no previous version to roll back to (harness skills versions %s lists them)", name, name)
		}
		version = string(h.Versions[cur].Parent)
	}
	i, err := find(h, version, nil, "")
	if err != nil {
		return record.SkillVersion{}, err
	}
	target := h.Versions[i]
	if target.State == record.VersionPending || target.State == record.VersionRejected {
		return record.SkillVersion{}, outcome.Usage("skill_version_not_approved", "%s@%s was never approved (%s): approve it instead", name, short(target.Version), target.State)
	}
	if err := s.makeLive(ctx, h, target.Version); err != nil {
		return target, err
	}
	from := h.Current
	back := record.SkillVersion{Version: target.Version, Parent: from, State: record.VersionLive, MadeBy: actor, CreatedAt: s.now(),
		Source: "rollback", Risk: target.Risk, Findings: target.Findings, Eval: target.Eval, Lock: pinnedNow(target.Lock, s.now())}
	s.supersede(h, target.Version)
	h.Versions = append(h.Versions, back)
	if err := s.writeHistory(h); err != nil {
		return back, err
	}
	if err := s.pin(ctx, h, target.Version, back.Lock); err != nil {
		return back, err
	}
	return back, s.appendAudit(record.SkillRolledBack, record.SkillAuditEvent{Skill: name, Version: target.Version, Parent: from, Actor: actor, Risk: target.Risk})
}

// Remove takes a skill out of its live root; its versions and history
// stay, so it can be rolled back.
func (s *Store) Remove(ctx context.Context, name string, actor record.Actor) error {
	h, unlock, err := s.edit(name)
	if err != nil {
		return err
	}
	defer unlock()
	if h.Current == "" {
		return outcome.Usage("skill_not_live", "%s is not live in any root this store manages", name)
	}
	stage, err := os.MkdirTemp(h.Root, stagePrefix)
	if err != nil {
		return err
	}
	defer os.RemoveAll(stage)
	if err := os.Rename(filepath.Join(h.Root, name), filepath.Join(stage, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := artifacts.SyncDir(h.Root); err != nil {
		return err
	}
	from := h.Current
	for i := range h.Versions {
		if h.Versions[i].State == record.VersionLive {
			h.Versions[i].State = record.VersionRemoved
		}
	}
	h.Current = ""
	if err := s.writeHistory(h); err != nil {
		return err
	}
	if err := s.unpin(h); err != nil {
		return err
	}
	return s.appendAudit(record.SkillRemoved, record.SkillAuditEvent{Skill: name, Version: from, Actor: actor})
}

// PendingVersion is one version waiting for a decision.
type PendingVersion struct {
	Name string `json:"name"`
	record.SkillVersion
}

// Pending lists every version waiting for approval, oldest first.
func (s *Store) Pending() ([]PendingVersion, error) {
	entries, err := os.ReadDir(filepath.Join(s.Dir, record.DirSkillVersions))
	if err != nil {
		return nil, err
	}
	out := []PendingVersion{}
	for _, e := range entries {
		if !e.IsDir() || !skills.ValidName(e.Name()) {
			continue
		}
		h, err := s.History(e.Name())
		if err != nil {
			return nil, err
		}
		for _, v := range h.Versions {
			if v.State == record.VersionPending {
				out = append(out, PendingVersion{Name: h.Name, SkillVersion: v})
			}
		}
	}
	slices.SortFunc(out, func(a, b PendingVersion) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}

func short(d artifacts.Digest) string {
	h := strings.TrimPrefix(string(d), "blake3:")
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// VersionOf is the digest that names a version of a skill: SKILL.md and
// every resource.
func VersionOf(sk *skills.Skill) artifacts.Digest { return sk.Version() }
