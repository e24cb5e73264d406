// Package audit applies cfc's content-scan rule catalog to skills: their
// SKILL.md, text scripts and references, and bundled executables. Runs use
// it to mark skills an enforce-strict policy will not activate; installs use
// it to refuse risky skills. It reads skill files; it decides nothing.
package audit

import (
	"fmt"
	"sync"

	"github.com/harness-dev/harness/cfc"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/skills"
)

// Bounds on what is scanned: SKILL.md up to 1 MiB, other text files up to
// 64 KiB each (larger ones are not instructions a model would follow whole).
const (
	maxSkillFile = 1 << 20
	maxResource  = 64 << 10
)

// Skill scans one skill's files.
func Skill(s *skills.Skill) []record.Finding {
	rd := skills.NewReader()
	defer rd.Close()
	return scanSkill(rd, s)
}

func scanSkill(rd *skills.Reader, s *skills.Skill) []record.Finding {
	var out []record.Finding
	scan := func(path, text string) {
		for _, f := range cfc.Scan(text) {
			out = append(out, record.Finding{Skill: s.Name, Path: path, Finding: f})
		}
	}
	// Files are read as they are now, confined to the skill's root: a
	// resource swapped for a link to a secret, /dev/zero or a FIFO yields
	// an error here, never its content, an endless read or a hang.
	if b, err := rd.ReadFile(s, s.SkillPath, maxSkillFile); err == nil {
		scan(s.SkillPath, string(b))
	}
	for _, res := range s.Resources {
		if res.ContentKind == "binary" {
			if head, _ := rd.ReadHead(s, res.HostPath, 4); len(head) > 0 {
				if f, ok := cfc.ExecutableFinding(head); ok {
					f.Match = "a binary executable is bundled with the skill"
					out = append(out, record.Finding{Skill: s.Name, Path: res.HostPath, Finding: f})
				}
			}
			continue
		}
		if res.Size > maxResource || (res.Kind != skills.KindScript && res.Kind != skills.KindReference) {
			continue
		}
		if b, err := rd.ReadFile(s, res.HostPath, maxResource); err == nil {
			scan(res.HostPath, string(b))
		}
	}
	return out
}

// Registry scans every effective skill of reg: findings become registry
// diagnostics (critical ones errors), and it returns all findings and, per
// skill, the rules of its critical findings.
func Registry(reg *skills.Registry) (findings []record.Finding, critical map[string][]string) {
	var c *Cache
	return c.Registry(reg)
}

// Cache remembers each skill's findings by its SKILL.md path and its
// digests, for runs that snapshot the same roots one after another (the
// tasks of a batch, runs in a row with a persistent cache): content with
// the same digests has the same findings. A nil *Cache scans every time.
// Safe for concurrent use.
type Cache struct {
	mu sync.Mutex
	m  map[string][]record.Finding
	// path is where a persistent cache is kept ("" in memory only);
	// learned says a scan added an entry since it was read.
	path    string
	learned bool
	// fresh are the keys this process added to a persistent cache.
	fresh map[string]bool
}

// NewCache returns an empty cache.
func NewCache() *Cache { return &Cache{m: map[string][]record.Finding{}} }

func (c *Cache) scan(rd *skills.Reader, s *skills.Skill) []record.Finding {
	if c == nil {
		return scanSkill(rd, s)
	}
	key := s.SkillPath + "\x00" + string(s.Digest) + "\x00" + string(s.TreeDigest)
	c.mu.Lock()
	fs, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return fs
	}
	fs = scanSkill(rd, s)
	c.mu.Lock()
	c.m[key] = fs
	c.learned = true
	if c.path != "" {
		c.fresh[key] = true
	}
	c.mu.Unlock()
	return fs
}

// Registry is the package's Registry with findings taken from the cache
// where a skill's digests were seen before.
func (c *Cache) Registry(reg *skills.Registry) (findings []record.Finding, critical map[string][]string) {
	critical = map[string][]string{}
	rd := skills.NewReader()
	defer rd.Close()
	for i := range reg.Skills {
		s := &reg.Skills[i]
		if s.ShadowedBy != "" {
			continue
		}
		for _, f := range c.scan(rd, s) {
			sev := skills.SeverityWarning
			if f.Severity == cfc.SeverityCritical {
				sev = skills.SeverityError
				critical[s.Name] = append(critical[s.Name], f.Rule)
			}
			detail := fmt.Sprintf("%s finding: %s", f.Severity, f.Match)
			if f.Hidden != "" {
				detail += "; hidden text: " + f.Hidden
			}
			s.Diagnostics = append(s.Diagnostics, skills.Diagnostic{Severity: sev, Code: f.Rule, Detail: detail, Path: f.Path, Line: f.Line})
			findings = append(findings, f)
		}
	}
	return findings, critical
}

// Assessment is what an operator reviews before trusting a skill: its
// manifest, its content findings and the risk tier both give it.
type Assessment struct {
	Permissions *skills.Permissions `json:"permissions,omitempty"`
	// PermissionsError is set when the manifest is not the documented
	// shape; the skill is then treated as critical.
	PermissionsError string           `json:"permissionsError,omitempty"`
	Findings         []record.Finding `json:"findings"`
	Risk             skills.Risk      `json:"risk"`
}

// Assess scores one skill: manifest plus content scan (skills.RiskOf). A
// manifest that does not parse is critical: it cannot be reviewed.
func Assess(s *skills.Skill) Assessment {
	a := Assessment{Findings: Skill(s)}
	if a.Findings == nil {
		a.Findings = []record.Finding{}
	}
	p, err := skills.PermissionsOf(s.Frontmatter)
	if err != nil {
		a.PermissionsError, a.Risk = err.Error(), skills.RiskCritical
		return a
	}
	var sev []string
	for _, f := range a.Findings {
		sev = append(sev, f.Severity)
	}
	a.Permissions, a.Risk = p, skills.RiskOf(p, sev)
	return a
}
