package skills

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/harness-dev/harness/artifacts"
)

// Refusal is a refused skill operation: Code for machines, Msg for people.
type Refusal struct {
	Code string
	Msg  string
}

func (r *Refusal) Error() string { return r.Msg }

// ReadSkillFile re-reads a skill's SKILL.md and returns it only when it is
// byte-for-byte the file the snapshot digested: what a run injects is what
// the registry recorded, or nothing.
func ReadSkillFile(s *Skill) ([]byte, error) {
	sc, err := newScanner([]string{s.Root}, "", "", Limits{})
	if err != nil {
		return nil, &Refusal{Code: "skill_unreadable", Msg: fmt.Sprintf("skills root %s: %v", s.Root, err)}
	}
	defer sc.close()
	root := sc.roots[0]
	rel, err := filepath.Rel(s.Root, s.SkillPath)
	if err != nil {
		return nil, &Refusal{Code: "skill_outside_root", Msg: fmt.Sprintf("%s is not inside its skills root %s", s.SkillPath, s.Root)}
	}
	data, err := readRegular(root, rel, maxSkillFile)
	if err != nil {
		if errors.Is(err, errTooLarge) {
			return nil, &Refusal{Code: "skill_snapshot_mismatch", Msg: fmt.Sprintf("%s grew past %d bytes since the snapshot", s.SkillPath, maxSkillFile)}
		}
		if escapes(err) {
			return nil, &Refusal{Code: "skill_outside_root", Msg: fmt.Sprintf("%s now resolves outside its skills root %s", s.SkillPath, s.Root)}
		}
		return nil, &Refusal{Code: "skill_unreadable", Msg: fmt.Sprintf("read %s: %v", s.SkillPath, err)}
	}
	if got := artifacts.DigestBytes(data); got != s.Digest {
		return nil, &Refusal{Code: "skill_snapshot_mismatch", Msg: fmt.Sprintf("%s changed after the registry snapshot (digest %s, snapshot %s); refusing to use text that was not snapshotted: rerun once the skill is stable", s.SkillPath, got, s.Digest)}
	}
	return data, nil
}

// Reader reads skills' files as they are now, confined to their skills
// roots: each file is opened beneath its root in one openat2 call (no
// "..", absolute or symlink escape), without blocking (a FIFO is refused,
// not waited on), regular files only, bounded (a larger file is refused,
// so /dev/zero behind a link cannot exhaust memory). Every host-side read
// of a skill's files outside the snapshot (the content audit) goes
// through one. Roots are opened once; Close releases them.
type Reader struct {
	roots map[string]*scanner
}

// NewReader returns a Reader with no root opened yet.
func NewReader() *Reader { return &Reader{roots: map[string]*scanner{}} }

// Close releases the roots opened.
func (r *Reader) Close() {
	for _, sc := range r.roots {
		sc.close()
	}
}

// ReadFile reads hostPath, a file of skill s, up to max bytes.
func (r *Reader) ReadFile(s *Skill, hostPath string, max int64) ([]byte, error) {
	root, rel, err := r.beneath(s, hostPath)
	if err != nil {
		return nil, err
	}
	return readRegular(root, rel, max)
}

// ReadHead reads the first n bytes of hostPath, a file of skill s.
func (r *Reader) ReadHead(s *Skill, hostPath string, n int) ([]byte, error) {
	root, rel, err := r.beneath(s, hostPath)
	if err != nil {
		return nil, err
	}
	f, err := openBeneath(root, rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", hostPath)
	}
	b := make([]byte, n)
	m, err := io.ReadFull(f, b)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil, err
	}
	return b[:m], nil
}

func (r *Reader) beneath(s *Skill, hostPath string) (*scanRoot, string, error) {
	rel, err := filepath.Rel(s.Root, hostPath)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return nil, "", &Refusal{Code: "resource_outside_root", Msg: fmt.Sprintf("%s is not inside its skills root %s", hostPath, s.Root)}
	}
	sc, ok := r.roots[s.Root]
	if !ok {
		if sc, err = newScanner([]string{s.Root}, "", "", Limits{}); err != nil {
			return nil, "", err
		}
		r.roots[s.Root] = sc
	}
	return sc.roots[0], rel, nil
}
