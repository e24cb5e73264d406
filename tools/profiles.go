package tools

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/harness-dev/harness/skills"

	"github.com/goccy/go-yaml"

	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/yamlsafe"
)

// sandboxStrength orders the backends a profile may ask for: bwrap (own
// namespaces) over auto (bwrap where it starts, else Landlock) over
// landlock over none. A profile may keep or raise its parent's, never lower.
var sandboxStrength = map[string]int{"none": 0, "landlock": 1, "auto": 2, "bwrap": 3}

// Parent is what a run allows, against which its profiles are checked.
type Parent struct {
	AllowTools        []string
	AllowSkillScripts []string
	Sandbox           string
}

// Profile is a subagent profile: what a child run may have. It can only
// narrow what the parent run has.
type Profile struct {
	Name              string   `yaml:"name" json:"name"`
	Description       string   `yaml:"description" json:"description"`
	Skills            []string `yaml:"skills" json:"skills"`
	AllowedTools      []string `yaml:"allowedTools" json:"allowedTools"`
	AllowSkillScripts []string `yaml:"allowSkillScripts" json:"allowSkillScripts"`
	Sandbox           string   `yaml:"sandbox" json:"sandbox,omitempty"`
	MaxTurns          int      `yaml:"maxTurns" json:"maxTurns"`
	Timeout           string   `yaml:"timeout" json:"timeout,omitempty"`
	Model             string   `yaml:"model" json:"model,omitempty"`
	// Tier runs the child on the model the operator maps to it (--tier),
	// over the tier its skills ask for; Model, when set, wins over both.
	Tier     string `yaml:"tier" json:"tier,omitempty"`
	MaxDepth int    `yaml:"maxDepth" json:"maxDepth"` // 0: no grandchildren
}

// ParseProfiles parses the content of the --profiles file at path and
// refuses any profile that would widen what the parent has: a write or
// side-effect tool, a script or a weaker sandbox the parent was not given.
// The caller reads the file, once: the content it records is the content
// checked here.
func ParseProfiles(path string, data []byte, parent Parent) ([]Profile, error) {
	var doc struct {
		Profiles []Profile `yaml:"profiles"`
	}
	if err := yamlsafe.Unmarshal(path, data, &doc, yaml.Strict()); err != nil {
		return nil, outcome.Usage("profiles_invalid", "--profiles %s: %s", path, yamlsafe.Reason(err))
	}
	if len(doc.Profiles) == 0 {
		return nil, outcome.Usage("profiles_invalid", "--profiles %s defines no profiles (a top-level profiles: list)", path)
	}
	seen := map[string]bool{}
	for _, p := range doc.Profiles {
		widen := func(format string, args ...any) error {
			return outcome.Usage("profile_widens_parent", "profile %s: %s; a profile can narrow what the run has, never widen it", p.Name, fmt.Sprintf(format, args...))
		}
		if p.Name == "" || seen[p.Name] {
			return nil, outcome.Usage("profiles_invalid", "--profiles %s: every profile needs a unique name", path)
		}
		seen[p.Name] = true
		for _, tl := range p.AllowedTools {
			if slices.Contains(ReadOnly, tl) {
				continue
			}
			if !slices.Contains(parent.AllowTools, tl) {
				return nil, widen("tool %s is not allowed to the parent run", tl)
			}
		}
		for _, sc := range p.AllowSkillScripts {
			if !slices.Contains(parent.AllowSkillScripts, sc) {
				return nil, widen("script %s is not allowed to the parent run", sc)
			}
		}
		if _, ok := sandboxStrength[p.Sandbox]; !ok && p.Sandbox != "" {
			return nil, outcome.Usage("profiles_invalid", "profile %s: sandbox %q: use auto, bwrap, landlock or none", p.Name, p.Sandbox)
		}
		if p.Sandbox != "" && sandboxStrength[p.Sandbox] < sandboxStrength[parent.Sandbox] {
			return nil, widen("sandbox %s is weaker than the parent's %s", p.Sandbox, parent.Sandbox)
		}
		if p.Timeout != "" {
			if _, err := time.ParseDuration(p.Timeout); err != nil {
				return nil, outcome.Usage("profiles_invalid", "profile %s: timeout %q is not a duration such as 5m", p.Name, p.Timeout)
			}
		}
		if p.Tier != "" && !slices.Contains(skills.Tiers, p.Tier) {
			return nil, outcome.Usage("profiles_invalid", "profile %s: tier %q: use %s", p.Name, p.Tier, strings.Join(skills.Tiers, ", "))
		}
		if p.MaxTurns < 0 || p.MaxDepth < 0 {
			return nil, outcome.Usage("profiles_invalid", "profile %s: maxTurns and maxDepth must not be negative", p.Name)
		}
		if slices.Contains(p.AllowedTools, DelegateToolName) && p.MaxDepth == 0 {
			return nil, widen("delegate_task needs maxDepth of at least 1")
		}
	}
	return doc.Profiles, nil
}
