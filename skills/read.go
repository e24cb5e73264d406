package skills

import (
	"errors"
	"fmt"
	"path/filepath"

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
