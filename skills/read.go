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

// ReadFileBounded reads a file of skill s as it is now: opened beneath the
// skill's root in one openat2 call (no "..", absolute or symlink escape),
// without blocking (a FIFO is refused, not waited on), regular files only,
// and at most max bytes (a larger file is refused, so /dev/zero behind a
// link cannot exhaust memory). Every host-side read of a skill's files
// outside the snapshot (the content audit) goes through it.
func ReadFileBounded(s *Skill, hostPath string, max int64) ([]byte, error) {
	return withSkillRoot(s, hostPath, func(root *scanRoot, rel string) ([]byte, error) {
		return readRegular(root, rel, max)
	})
}

// ReadHead reads the first n bytes of a regular file of skill s, opened
// the same confined way.
func ReadHead(s *Skill, hostPath string, n int) ([]byte, error) {
	return withSkillRoot(s, hostPath, func(root *scanRoot, rel string) ([]byte, error) {
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
	})
}

func withSkillRoot(s *Skill, hostPath string, read func(*scanRoot, string) ([]byte, error)) ([]byte, error) {
	rel, err := filepath.Rel(s.Root, hostPath)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return nil, &Refusal{Code: "resource_outside_root", Msg: fmt.Sprintf("%s is not inside its skills root %s", hostPath, s.Root)}
	}
	sc, err := newScanner([]string{s.Root}, "", "", Limits{})
	if err != nil {
		return nil, err
	}
	defer sc.close()
	return read(sc.roots[0], rel)
}
