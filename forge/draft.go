// Package forge is SkillForge: it turns a skill the model wrote into a
// draft outside every live root, validates and scans it, runs its own
// tests in the sandbox against a throwaway copy of the workspace, and
// hands a passing draft to the skill store, live or pending as the
// operator's approval rule says. Nothing the model writes becomes a live
// skill any other way.
package forge

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/harness-dev/harness/skills"
)

// Bounds on what one draft may bring.
const (
	maxFiles     = 64
	maxDraftSize = 1 << 20
	maxTests     = 16
	// TestsFile is where a draft's tests are kept inside the skill.
	TestsFile = "tests/harness-tests.yaml"
)

// Draft is what create_skill receives.
type Draft struct {
	Name        string            `json:"name"`
	Description string            `json:"description"`
	Body        string            `json:"body"`
	Files       map[string]string `json:"files,omitempty"`
	// Permissions is the manifest as the model wrote it; it is stored in
	// the frontmatter and read back by the same parser as any skill's.
	Permissions map[string]any `json:"permissions,omitempty"`
	Tests       []Test         `json:"tests,omitempty"`
	// Composes names the skills a composed skill orders (compose_skills).
	Composes []string `json:"-"`
}

// Test is one check a draft carries: run a script of the draft with
// arguments and stdin, and compare what it did.
type Test struct {
	Script string   `json:"script" yaml:"script"`
	Args   []string `json:"args,omitempty" yaml:"args,omitempty"`
	Stdin  string   `json:"stdin,omitempty" yaml:"stdin,omitempty"`
	Expect Expect   `json:"expect" yaml:"expect"`
}

// Expect is what a test requires; an unset exit code means 0.
type Expect struct {
	ExitCode       *int   `json:"exitCode,omitempty" yaml:"exitCode,omitempty"`
	StdoutContains string `json:"stdoutContains,omitempty" yaml:"stdoutContains,omitempty"`
	StdoutRegex    string `json:"stdoutRegex,omitempty" yaml:"stdoutRegex,omitempty"`
}

// check refuses what cannot be written at all: a bad name, paths that
// leave the skill or take harness's own files, oversize drafts, tests of
// scripts the draft does not have.
func (d *Draft) check() []string {
	var errs []string
	if !skills.ValidName(d.Name) {
		errs = append(errs, fmt.Sprintf("name %q is not a skill name (lowercase letters, digits and single hyphens, at most 64)", d.Name))
	}
	if len(d.Files) > maxFiles {
		errs = append(errs, fmt.Sprintf("%d files: a draft has at most %d", len(d.Files), maxFiles))
	}
	size := len(d.Body) + len(d.Description)
	for p, c := range d.Files {
		size += len(c)
		switch {
		case skills.CheckResourcePath(p) != nil || strings.HasPrefix(p, "/"):
			errs = append(errs, fmt.Sprintf("file %q: give a normalized path inside the skill, such as scripts/run.sh", p))
		case p == "SKILL.md" || p == TestsFile:
			errs = append(errs, fmt.Sprintf("file %q is written by harness from the other fields", p))
		}
	}
	if size > maxDraftSize {
		errs = append(errs, fmt.Sprintf("the draft is %d bytes: at most %d", size, maxDraftSize))
	}
	if d.Permissions == nil {
		errs = append(errs, `permissions is missing: a skill harness creates declares what its scripts may touch, and its tests run with exactly that. For example "permissions": {"filesystem": {"read": ["src"], "write": ["out"]}, "exec": ["wc"]} (paths relative to the workspace; exec: programs the scripts run besides their interpreter; also env and network), or {} when its scripts need nothing of the workspace`)
	}
	if len(d.Tests) > maxTests {
		errs = append(errs, fmt.Sprintf("%d tests: at most %d", len(d.Tests), maxTests))
	}
	for i, t := range d.Tests {
		if !strings.HasPrefix(t.Script, "scripts/") {
			errs = append(errs, fmt.Sprintf("test %d: script %q must be under scripts/", i+1, t.Script))
		} else if _, ok := d.Files[t.Script]; !ok {
			errs = append(errs, fmt.Sprintf("test %d: script %q is not one of the draft's files", i+1, t.Script))
		}
	}
	slices.Sort(errs)
	return errs
}

// skillMD is the draft's SKILL.md: frontmatter harness writes (the
// model's text goes in as values, never as YAML), then the body.
func (d *Draft) skillMD() ([]byte, error) {
	harness := yaml.MapSlice{}
	if d.Permissions != nil {
		harness = append(harness, yaml.MapItem{Key: "permissions", Value: d.Permissions})
	}
	if len(d.Composes) > 0 {
		harness = append(harness, yaml.MapItem{Key: "composes", Value: d.Composes})
	}
	fm := yaml.MapSlice{{Key: "name", Value: d.Name}, {Key: "description", Value: d.Description}}
	if len(harness) > 0 {
		fm = append(fm, yaml.MapItem{Key: "metadata", Value: yaml.MapSlice{{Key: "harness", Value: harness}}})
	}
	head, err := yaml.Marshal(fm)
	if err != nil {
		return nil, err
	}
	body := strings.TrimLeft(d.Body, "\n")
	return []byte("---\n" + string(head) + "---\n\n" + body + "\n"), nil
}

// write puts the draft under dir/<name>/ through an os.Root, so no path
// in it can land outside, whatever links or names it holds.
func (d *Draft) write(dir string) (string, error) {
	skillDir := filepath.Join(dir, d.Name)
	if err := os.MkdirAll(skillDir, 0o755); err != nil {
		return "", err
	}
	root, err := os.OpenRoot(skillDir)
	if err != nil {
		return "", err
	}
	defer root.Close()
	md, err := d.skillMD()
	if err != nil {
		return "", err
	}
	if err := root.WriteFile("SKILL.md", md, 0o644); err != nil {
		return "", err
	}
	if len(d.Tests) > 0 {
		tests, err := yaml.Marshal(d.Tests)
		if err != nil {
			return "", err
		}
		if err := writeIn(root, TestsFile, tests, 0o644); err != nil {
			return "", err
		}
	}
	for _, p := range slices.Sorted(maps.Keys(d.Files)) {
		mode := os.FileMode(0o644)
		if strings.HasPrefix(p, "scripts/") {
			mode = 0o755
		}
		if err := writeIn(root, p, []byte(d.Files[p]), mode); err != nil {
			return "", fmt.Errorf("file %s: %w", p, err)
		}
	}
	return skillDir, nil
}

func writeIn(root *os.Root, p string, data []byte, mode os.FileMode) error {
	if dir := filepath.Dir(p); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	f, err := root.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
