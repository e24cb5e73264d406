package store

// Finding a kept version of a skill by its digest or a prefix of it.

import (
	"path/filepath"
	"strings"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
)

// find returns the index of a version in the history: the one named
// (a full digest or a unique prefix of its hex), or the newest one
// matching pick when version is empty.
func find(h *record.SkillHistory, version string, pick func(record.SkillVersion) bool, what string) (int, error) {
	if version == "" {
		for i := len(h.Versions) - 1; i >= 0; i-- {
			if pick(h.Versions[i]) {
				return i, nil
			}
		}
		return -1, outcome.Usage("skill_version_not_found", "%s has no %s version", h.Name, what)
	}
	hexPart := strings.TrimPrefix(version, "blake3:")
	found := -1
	for i, v := range h.Versions {
		if strings.HasPrefix(strings.TrimPrefix(string(v.Version), "blake3:"), hexPart) {
			if found >= 0 && h.Versions[found].Version != v.Version {
				return -1, outcome.Usage("skill_version_ambiguous", "%s matches more than one version of %s: give more of the digest", version, h.Name)
			}
			found = i
		}
	}
	if found < 0 {
		return -1, outcome.Usage("skill_version_not_found", "%s has no version %s (harness skills versions %s lists them)", h.Name, version, h.Name)
	}
	return found, nil
}

// VersionTree finds a kept version of a skill (a full digest or a unique
// prefix of its hex) and the directory its tree is in, which scans as a
// root holding exactly that skill. The caller checks the tree it reads
// against the version: the store's files are not trusted for having been
// written by harness.
func (s *Store) VersionTree(name, version string) (artifacts.Digest, string, error) {
	h, err := s.History(name)
	if err != nil {
		return "", "", err
	}
	i, err := find(h, version, nil, "")
	if err != nil {
		return "", "", err
	}
	v := h.Versions[i].Version
	return v, filepath.Join(s.versionDir(name, v), name), nil
}
