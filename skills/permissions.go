package skills

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/harness-dev/harness/egress"
)

// Permissions is a skill's capability manifest, frontmatter
// metadata.harness.permissions: what its scripts (and, later, its servers)
// may touch. Absent fields grant nothing. The operator reviews it (skills
// info), the risk tier is computed from it, and nothing in it widens what
// the operator allowed.
type Permissions struct {
	Filesystem FilesystemPermissions `json:"filesystem"`
	// Network is host[:port] entries.
	Network []string `json:"network,omitempty"`
	// Env is names of environment variables the skill needs passed.
	Env []string `json:"env,omitempty"`
	// Exec is what the skill's code may execute besides its interpreter:
	// program names looked up on PATH, absolute paths of programs, absolute
	// directories (ending in "/": everything beneath), and ExecTemp (the
	// call's private temporary directory). ExecEntryOf tells them apart.
	Exec        []string `json:"exec,omitempty"`
	Credentials bool     `json:"credentials,omitempty"`
}

// FilesystemPermissions are paths relative to the workspace.
type FilesystemPermissions struct {
	Read  []string `json:"read,omitempty"`
	Write []string `json:"write,omitempty"`
}

// Empty reports whether the manifest grants nothing.
func (p *Permissions) Empty() bool {
	return p == nil || len(p.Filesystem.Read)+len(p.Filesystem.Write)+len(p.Network)+len(p.Env)+len(p.Exec) == 0 && !p.Credentials
}

var (
	envName  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	execName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]*$`)
)

// PermissionsOf reads the manifest from a skill's frontmatter: nil when
// the skill declares none, an error naming the first field that is not
// the documented shape. Unknown keys are errors: a manifest the operator
// reviews must mean exactly what it says.
func PermissionsOf(fm map[string]any) (*Permissions, error) {
	meta, _ := fm["metadata"].(map[string]any)
	h, _ := meta["harness"].(map[string]any)
	raw, present := h["permissions"]
	if !present {
		return nil, nil
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("metadata.harness.permissions must be a mapping")
	}
	p := &Permissions{}
	for k, v := range m {
		var err error
		switch k {
		case "filesystem":
			err = readFilesystem(v, &p.Filesystem)
		case "network":
			p.Network, err = list("network", v, checkHost)
		case "env":
			p.Env, err = list("env", v, func(s string) error {
				if !envName.MatchString(s) {
					return fmt.Errorf("%q is not an environment variable name", s)
				}
				return nil
			})
		case "exec":
			p.Exec, err = list("exec", v, func(s string) error {
				_, err := ExecEntryOf(s)
				return err
			})
		case "credentials":
			b, ok := v.(bool)
			if !ok {
				err = fmt.Errorf("credentials must be true or false")
			}
			p.Credentials = b
		default:
			err = fmt.Errorf("unknown field %q (known: filesystem, network, env, exec, credentials)", k)
		}
		if err != nil {
			return nil, fmt.Errorf("metadata.harness.permissions: %w", err)
		}
	}
	return p, nil
}

func readFilesystem(v any, fs *FilesystemPermissions) error {
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("filesystem must be a mapping with read and write lists")
	}
	for k, paths := range m {
		var err error
		switch k {
		case "read":
			fs.Read, err = list("filesystem.read", paths, checkRelPath)
		case "write":
			fs.Write, err = list("filesystem.write", paths, checkRelPath)
		default:
			err = fmt.Errorf("filesystem: unknown field %q (known: read, write)", k)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func list(field string, v any, check func(string) error) ([]string, error) {
	items, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s must be a list", field)
	}
	var out []string
	for _, it := range items {
		s, ok := it.(string)
		if !ok || s == "" {
			return nil, fmt.Errorf("%s: every entry must be a non-empty string", field)
		}
		if err := check(s); err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out, nil
}

// globChars are the characters a reader takes for a pattern. A path
// holding one is refused rather than taken as a literal name: write: ["*"]
// must not grant a directory called "*" to an operator who read it as
// "everything".
const globChars = "*?[]{}"

// checkRelPath accepts a clean path relative to the workspace that stays
// inside it ("." is the whole workspace).
func checkRelPath(s string) error {
	if strings.HasPrefix(s, "/") || strings.Contains(s, "\\") {
		return fmt.Errorf("%q must be relative to the workspace", s)
	}
	if strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return fmt.Errorf("%q holds a control character; paths are literal names of files", s)
	}
	if strings.ContainsAny(s, globChars) {
		return fmt.Errorf("%q holds a wildcard character (%s); paths are literal: name each directory or file", s, globChars)
	}
	c := path.Clean(s)
	if c == ".." || strings.HasPrefix(c, "../") {
		return fmt.Errorf("%q leaves the workspace", s)
	}
	return nil
}

// checkHost accepts what the egress proxy can enforce: host or
// host:port, a DNS name or an IP address, no wildcards or schemes.
func checkHost(s string) error {
	_, err := egress.ParseRule(s)
	return err
}

// Risk is a skill's tier, from its manifest and its content scan. The
// order matters: approval compares tiers.
type Risk int

const (
	RiskMinimal Risk = iota
	RiskLow
	RiskModerate
	// RiskUndeclared is a skill without a manifest: its code sees the
	// whole workspace and may run anything its sandbox shows, so no
	// approval tier below a person's covers it.
	RiskUndeclared
	RiskHigh
	RiskCritical
)

var riskNames = []string{"minimal", "low", "moderate", "undeclared", "high", "critical"}

func (r Risk) String() string {
	if r < RiskMinimal || r > RiskCritical {
		return fmt.Sprintf("risk(%d)", int(r))
	}
	return riskNames[r]
}

// MarshalText writes the tier's name.
func (r Risk) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText reads a tier's name.
func (r *Risk) UnmarshalText(b []byte) error {
	v, err := ParseRisk(string(b))
	*r = v
	return err
}

// ParseRisk reads a tier's name.
func ParseRisk(s string) (Risk, error) {
	if i := slices.Index(riskNames, s); i >= 0 {
		return Risk(i), nil
	}
	return 0, fmt.Errorf("unknown risk tier %q (minimal, low, moderate, undeclared, high, critical)", s)
}

// RiskOf scores a manifest as the self-modification spec's table does:
// no manifest at all is undeclared (above moderate: what its code may
// touch is not bounded), an empty one minimal, reading files or
// environment variables low, writing or network moderate,
// running binaries or credentials high, more than one high category
// critical; the highest applies. Content-scan findings raise it: a
// critical finding makes the skill critical, a high one at least high, a
// medium one at least moderate. Severities are the scan's names.
func RiskOf(p *Permissions, findingSeverities []string) Risk {
	r := RiskUndeclared
	if p != nil {
		r = RiskMinimal
		if len(p.Filesystem.Read) > 0 || len(p.Env) > 0 {
			r = max(r, RiskLow)
		}
		if len(p.Filesystem.Write) > 0 || len(p.Network) > 0 {
			r = max(r, RiskModerate)
		}
		high := 0
		if len(p.Exec) > 0 {
			high++
		}
		if p.Credentials {
			high++
		}
		switch {
		case high > 1:
			r = RiskCritical
		case high == 1:
			r = max(r, RiskHigh)
		}
	}
	for _, s := range findingSeverities {
		switch s {
		case "critical":
			r = RiskCritical
		case "high":
			r = max(r, RiskHigh)
		case "medium":
			r = max(r, RiskModerate)
		}
	}
	return r
}

// Destructive reports whether a skill marks itself
// metadata.harness.destructive: true, so that every call running its code
// waits for a person. A value that is neither true nor false ("yes", 1, a
// list) counts as true: a skill that meant to ask for a person gets one
// (DestructiveInvalid says so in validation).
func Destructive(fm map[string]any) bool {
	switch d := destructiveValue(fm).(type) {
	case nil:
		return false
	case bool:
		return d
	case string:
		return d != "false"
	}
	return true
}

// DestructiveInvalid describes a destructive value that is not a boolean
// ("" when it is one, or absent).
func DestructiveInvalid(fm map[string]any) string {
	switch d := destructiveValue(fm).(type) {
	case nil, bool:
		return ""
	case string:
		if d == "true" || d == "false" {
			return ""
		}
	}
	return fmt.Sprintf("metadata.harness.destructive is %v, not true or false; it is taken as true (every call running the skill's code waits for a person)", destructiveValue(fm))
}

func destructiveValue(fm map[string]any) any {
	meta, _ := fm["metadata"].(map[string]any)
	h, _ := meta["harness"].(map[string]any)
	return h["destructive"]
}
