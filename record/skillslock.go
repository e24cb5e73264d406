package record

import (
	"time"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/skills"
)

// SkillLockEntry is one skill of a root's skills.lock.json: where the
// live version came from and what it holds. The store keeps it with each
// version it stores (SkillVersion.Lock), so that whichever version goes
// live (approved, rolled back to) the lock pins that one.
type SkillLockEntry struct {
	Source      string           `json:"source"`
	TreeDigest  artifacts.Digest `json:"treeDigest"`
	SkillDigest artifacts.Digest `json:"skillDigest"`
	InstalledAt time.Time        `json:"installedAt"`
	Findings    []Finding        `json:"findings"`
	// Git pins a skill added from a git repository: what was asked and
	// the commit it named.
	Git *GitPin `json:"git,omitempty"`
	// Risk and Permissions are what the version was assessed as, which
	// an update compares against.
	Risk        *skills.Risk        `json:"risk,omitempty"`
	Permissions *skills.Permissions `json:"permissions,omitempty"`
}

// GitPin is where a skill came from in a git repository.
type GitPin struct {
	URL string `json:"url"`
	// Ref is the ref asked for ("" for the default branch); Commit the
	// commit it named when the skill was added.
	Ref    string `json:"ref,omitempty"`
	Commit string `json:"commit"`
	// Path is the skill's directory in the repository's tree.
	Path string `json:"path"`
}

// String is the pin as a source: URL#PATH@COMMIT.
func (p *GitPin) String() string {
	s := p.URL
	if p.Path != "" {
		s += "#" + p.Path
	}
	return s + "@" + p.Commit
}
