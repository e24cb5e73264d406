package skills

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/harness-dev/harness/internal/shellquote"
)

// Requirements are what a skill needs from the machine, read from
// frontmatter metadata.openclaw (or its legacy name metadata.clawdbot),
// the format most published skills use, or metadata.requires.
type Requirements struct {
	Bins    []string      `json:"bins,omitempty"`    // all on PATH
	AnyBins []string      `json:"anyBins,omitempty"` // at least one on PATH
	Env     []string      `json:"env,omitempty"`     // set and non-empty
	OS      []string      `json:"os,omitempty"`      // linux, darwin, win32
	Install []InstallSpec `json:"install,omitempty"`
}

// InstallSpec is one way to install what a skill needs.
type InstallSpec struct {
	Kind    string   `json:"kind"` // brew, apt, node, go, uv, download
	Formula string   `json:"formula,omitempty"`
	Package string   `json:"package,omitempty"`
	Module  string   `json:"module,omitempty"`
	URL     string   `json:"url,omitempty"`
	Bins    []string `json:"bins,omitempty"`
	Label   string   `json:"label,omitempty"`
}

// Missing lists the requirements this machine does not meet.
type Missing struct {
	Bins    []string `json:"bins,omitempty"`
	AnyBins []string `json:"anyBins,omitempty"`
	Env     []string `json:"env,omitempty"`
	OS      []string `json:"os,omitempty"`
}

func (m Missing) empty() bool {
	return len(m.Bins)+len(m.AnyBins)+len(m.Env)+len(m.OS) == 0
}

// Environment is what eligibility is judged against; the zero value
// means this process's PATH, environment and OS.
type Environment struct {
	Path   string
	Getenv func(string) string
	OS     string // linux, darwin, win32
}

func (e Environment) withDefaults() Environment {
	if e.Path == "" {
		e.Path = os.Getenv("PATH")
	}
	if e.Getenv == nil {
		e.Getenv = os.Getenv
	}
	if e.OS == "" {
		e.OS = runtime.GOOS
		if e.OS == "windows" {
			e.OS = "win32"
		}
	}
	return e
}

// readRequirements extracts requirements from frontmatter; ok is false
// when the skill declares none.
func readRequirements(fm map[string]any) (Requirements, bool) {
	meta, _ := fm["metadata"].(map[string]any)
	if meta == nil {
		return Requirements{}, false
	}
	var src map[string]any
	for _, k := range []string{"openclaw", "clawdbot"} {
		if m, ok := meta[k].(map[string]any); ok {
			src = m
			break
		}
	}
	var req map[string]any
	if src != nil {
		req, _ = src["requires"].(map[string]any)
	} else if m, ok := meta["requires"].(map[string]any); ok {
		req, src = m, m
	}
	if src == nil {
		return Requirements{}, false
	}
	r := Requirements{OS: strs(src["os"])}
	if req != nil {
		r.Bins, r.AnyBins, r.Env = strs(req["bins"]), strs(req["anyBins"]), strs(req["env"])
		if len(r.OS) == 0 {
			r.OS = strs(req["os"])
		}
	}
	list, _ := src["install"].([]any)
	for _, it := range list {
		m, ok := it.(map[string]any)
		if !ok {
			continue
		}
		str := func(k string) string { s, _ := m[k].(string); return s }
		r.Install = append(r.Install, InstallSpec{Kind: str("kind"), Formula: str("formula"), Package: str("package"),
			Module: str("module"), URL: str("url"), Bins: strs(m["bins"]), Label: str("label")})
	}
	return r, len(r.Bins)+len(r.AnyBins)+len(r.Env)+len(r.OS)+len(r.Install) > 0
}

func strs(v any) []string {
	switch t := v.(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, e := range t {
			if s, ok := e.(string); ok && s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// evaluate checks requirements against the environment. A binary counts
// only as an executable regular file on PATH: a directory of that name
// does not. A name that is not a file name (a slash, "..") is missing:
// joined to a PATH directory it would name any path of the host, and the
// skill's eligibility, which the model reads, would tell its author
// whether an executable is there. So is a name found only under a
// relative PATH entry, which depends on where harness was started.
func evaluate(r Requirements, env Environment) Missing {
	var m Missing
	dirs := filepath.SplitList(env.Path)
	onPath := func(name string) bool {
		if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
			return false
		}
		for _, d := range dirs {
			if !filepath.IsAbs(d) {
				continue
			}
			fi, err := os.Stat(filepath.Join(d, name))
			if err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
				return true
			}
		}
		return false
	}
	for _, b := range r.Bins {
		if !onPath(b) {
			m.Bins = append(m.Bins, b)
		}
	}
	if len(r.AnyBins) > 0 && !slices.ContainsFunc(r.AnyBins, onPath) {
		m.AnyBins = r.AnyBins
	}
	for _, e := range r.Env {
		if strings.TrimSpace(env.Getenv(e)) == "" {
			m.Env = append(m.Env, e)
		}
	}
	if len(r.OS) > 0 && !slices.Contains(r.OS, env.OS) {
		m.OS = r.OS
	}
	return m
}

// installHints turns install specs into command lines for this OS.
func installHints(specs []InstallSpec, goos string) []string {
	var out []string
	for _, s := range specs {
		var words []string
		switch s.Kind {
		case "brew":
			if goos == "darwin" || goos == "linux" {
				words = []string{"brew", "install", first(s.Formula, s.Package)}
			}
		case "apt":
			if goos == "linux" {
				words = []string{"sudo", "apt-get", "install", "-y", first(s.Package, s.Formula)}
			}
		case "node":
			words = []string{"npm", "install", "-g", first(s.Package, s.Module)}
		case "go":
			words = []string{"go", "install", first(s.Module, s.Package)}
		case "uv":
			words = []string{"uv", "tool", "install", first(s.Package, s.Module)}
		case "download":
			words = []string{"download", s.URL}
		}
		// The names are the skill author's words: each stays one word
		// of one command, and the label one comment.
		// A name that starts with "-" would be an option of the
		// installer (--index-url=..., -oDPkg::...), not a package.
		if len(words) == 0 || words[len(words)-1] == "" || strings.HasPrefix(words[len(words)-1], "-") {
			continue
		}
		cmd, ok := shellquote.Line(words...)
		if !ok {
			continue
		}
		if label := shellquote.Comment(s.Label); label != "" {
			cmd += "  # " + label
		}
		out = append(out, cmd)
	}
	return out
}

func first(xs ...string) string {
	for _, x := range xs {
		if x != "" {
			return x
		}
	}
	return ""
}

// checkEligibility fills a skill's eligibility fields.
func checkEligibility(s *Skill, env Environment) {
	req, ok := readRequirements(s.Frontmatter)
	eligible := true
	s.Eligible = &eligible
	if !ok {
		return
	}
	m := evaluate(req, env)
	*s.Eligible = m.empty()
	s.Requires, s.Missing = &req, &m
	s.InstallHints = installHints(req.Install, env.OS)
}

// Eligible reports whether the skill's requirements are met (skills
// without requirements are).
func (s *Skill) IsEligible() bool { return s.Eligible == nil || *s.Eligible }
