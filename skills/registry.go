package skills

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harness-dev/harness/artifacts"
)

// RegistryType and RegistryVersion identify skill-registry.json.
const (
	RegistryType    = "harness.skill-registry"
	RegistryVersion = 1
)

// Limits bound the traversal of skill roots. They are recorded in the
// snapshot; reaching one is a scan-limit-reached diagnostic, never a
// silent cut.
type Limits struct {
	DiscoveryDepth int `json:"discoveryDepth"` // directory levels below a root searched for SKILL.md
	DiscoveryDirs  int `json:"discoveryDirs"`  // directories visited per root while discovering
	ResourceDepth  int `json:"resourceDepth"`  // directory levels below a skill indexed as resources
	ResourceFiles  int `json:"resourceFiles"`  // files indexed per skill
}

// DefaultLimits are the limits used for zero fields.
func DefaultLimits() Limits {
	return Limits{DiscoveryDepth: 6, DiscoveryDirs: 2000, ResourceDepth: 8, ResourceFiles: 2000}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.DiscoveryDepth <= 0 {
		l.DiscoveryDepth = d.DiscoveryDepth
	}
	if l.DiscoveryDirs <= 0 {
		l.DiscoveryDirs = d.DiscoveryDirs
	}
	if l.ResourceDepth <= 0 {
		l.ResourceDepth = d.ResourceDepth
	}
	if l.ResourceFiles <= 0 {
		l.ResourceFiles = d.ResourceFiles
	}
	return l
}

// Registry is skill-registry.json: the run-start snapshot of every skill
// under the configured roots. Its Go type is the artifact's schema.
type Registry struct {
	artifacts.Envelope
	GeneratedAt time.Time        `json:"generatedAt"`
	Roots       []Root           `json:"roots"`
	Limits      Limits           `json:"limits"`
	Digest      artifacts.Digest `json:"digest"`
	Skills      []Skill          `json:"skills"`
	Diagnostics []Diagnostic     `json:"diagnostics"`
	// Eligibility records what requirements were checked against: the
	// PATH entries searched and the OS, so the verdicts can be reproduced.
	Eligibility EligibilityContext `json:"eligibility"`

	// scanStart is when Scan began, by this machine's clock; zero for a
	// registry decoded from a file. A later scan needs it to reuse this
	// snapshot's digests safely (ScanOptions.Previous).
	scanStart time.Time
}

// EligibilityContext is the machine a snapshot judged eligibility on.
type EligibilityContext struct {
	Path []string `json:"path"`
	OS   string   `json:"os"`
}

// Root is a configured skill root, in precedence order.
type Root struct {
	Path        string `json:"path"`
	SandboxPath string `json:"sandboxPath"`
	// External roots lie outside the workspace (--external-skills-root);
	// SandboxPath is then /skills/<label>.
	External bool `json:"external,omitempty"`
}

// Skill is one accepted skill directory.
type Skill struct {
	Name             string `json:"name"`
	Description      string `json:"description"`
	Root             string `json:"root"`
	SkillPath        string `json:"skillPath"`
	SkillDir         string `json:"skillDir"`
	SandboxSkillPath string `json:"sandboxSkillPath"`
	SandboxSkillDir  string `json:"sandboxSkillDir"`
	// LinkedFrom is set when the skill was found through a symbolic link:
	// SkillDir is then the link's canonical target and Root the root it is
	// read through, while LinkedFrom says where the link sits.
	LinkedFrom  *SkillLink       `json:"linkedFrom,omitempty"`
	Digest      artifacts.Digest `json:"digest"`
	TreeDigest  artifacts.Digest `json:"treeDigest"`
	Frontmatter map[string]any   `json:"frontmatter"`
	// Headings are the body's Markdown headings (at most maxHeadings), for
	// finding the skill by what it covers (find_skills).
	Headings   []string `json:"headings,omitempty"`
	BodyOffset int      `json:"bodyOffset"`
	// ShadowedBy is the SKILL.md path of the skill that won the name: a
	// root earlier in the precedence order, or an earlier path in the same
	// root. A shadowed skill is kept for the record and never loaded.
	ShadowedBy  string       `json:"shadowedBy,omitempty"`
	Resources   []Resource   `json:"resources"`
	Diagnostics []Diagnostic `json:"diagnostics"`
	// Eligible says whether this machine meets the skill's requirements
	// (Requires), and if not, what is Missing and how to install it.
	Eligible     *bool         `json:"eligible,omitempty"`
	Requires     *Requirements `json:"requires,omitempty"`
	Missing      *Missing      `json:"missing,omitempty"`
	InstallHints []string      `json:"installHints,omitempty"`

	rootIndex int
	relDir    string    // skill directory relative to its root, slash-separated
	body      []byte    // the Markdown after the frontmatter, for link checks
	bodyLine  int       // 1-based line of SKILL.md where the body starts
	fsRoot    *scanRoot // the root the skill was found in, during a scan
	walked    *walkInfo // what listing it saw, during a scan
}

// Resource is one supporting file of a skill.
type Resource struct {
	Path        string           `json:"path"`
	Kind        string           `json:"kind"`
	HostPath    string           `json:"hostPath"`
	SandboxPath string           `json:"sandboxPath"`
	Size        int64            `json:"size"`
	Digest      artifacts.Digest `json:"digest"`
	ContentKind string           `json:"contentKind"`
	Referenced  bool             `json:"referenced"`
	Executable  *bool            `json:"executable,omitempty"`
	Shebang     string           `json:"shebang,omitempty"`
	Runtime     string           `json:"runtime,omitempty"`
	// Stat fingerprints the file as it was digested (inode, size,
	// modification and change time), so a later scan can tell an
	// untouched file without reading it.
	Stat        string       `json:"stat,omitempty"`
	Diagnostics []Diagnostic `json:"diagnostics"`

	// digested says the scan's loader has already digested the file
	// while listing it (inlineDigest), so no digest job is made for it.
	digested bool
}

// Resource kinds, by the first path segment.
const (
	KindReference = "reference"
	KindAsset     = "asset"
	KindTemplate  = "template"
	KindScript    = "script"
	KindOther     = "other"
)

func resourceKind(rel string) string {
	first, _, _ := strings.Cut(rel, "/")
	switch first {
	case "references":
		return KindReference
	case "assets":
		return KindAsset
	case "templates":
		return KindTemplate
	case "scripts":
		return KindScript
	}
	return KindOther
}

// Lookup returns the effective skill called name: not shadowed.
func (r *Registry) Lookup(name string) (*Skill, bool) {
	if r == nil {
		return nil, false
	}
	for i := range r.Skills {
		if r.Skills[i].Name == name && r.Skills[i].ShadowedBy == "" {
			return &r.Skills[i], true
		}
	}
	return nil, false
}

// Available lists the names of the effective skills, sorted.
func (r *Registry) Available() []string {
	if r == nil {
		return nil
	}
	var out []string
	for _, s := range r.Skills {
		if s.ShadowedBy == "" {
			out = append(out, s.Name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Resource returns the skill's resource at the slash path rel.
func (s *Skill) Resource(rel string) (*Resource, bool) {
	i, ok := slices.BinarySearchFunc(s.Resources, rel, func(r Resource, p string) int { return strings.Compare(r.Path, p) })
	if !ok {
		return nil, false
	}
	return &s.Resources[i], true
}

// treeDigest digests the sorted (path, digest) list of a skill's resources.
// h is a Hasher to reuse; it is emptied first.
func treeDigest(h *artifacts.Hasher, rs []Resource) artifacts.Digest {
	h.Reset()
	h.WriteField("harness.skill-tree/1")
	for _, r := range rs {
		h.WriteField(r.Path)
		h.WriteField(string(r.Digest))
	}
	return h.Digest()
}

// registryDigest covers every skill's identity and content and the
// limits, but no host path and no time: the same tree under another
// checkout directory has the same digest.
func registryDigest(limits Limits, skills []Skill) artifacts.Digest {
	h := artifacts.NewHasher()
	h.WriteField("harness.skill-registry/2")
	h.WriteField(fmt.Sprintf("%d/%d/%d/%d", limits.DiscoveryDepth, limits.DiscoveryDirs, limits.ResourceDepth, limits.ResourceFiles))
	for _, s := range skills {
		h.WriteField(s.Name)
		h.WriteField(fmt.Sprint(s.rootIndex))
		h.WriteField(s.relDir)
		// A link re-pointed at another copy of the same content is still a
		// different skill source.
		target := ""
		if s.LinkedFrom != nil {
			target = relTo(s.LinkedFrom.Root, s.SkillDir)
		}
		h.WriteField(target)
		h.WriteField(string(s.Digest))
		h.WriteField(string(s.TreeDigest))
		h.WriteField(fmt.Sprint(s.ShadowedBy != ""))
	}
	return h.Digest()
}

// StreamJSON writes the registry as the same indented JSON that
// encoding/json would produce, one skill at a time, so that a snapshot of
// tens of thousands of resources never exists twice in memory.
func (r *Registry) StreamJSON(w io.Writer) error {
	head := *r
	head.Skills = []Skill{}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(&head); err != nil {
		return err
	}
	// A raw newline never occurs inside a JSON string, so this marker can
	// only be the top-level skills field.
	const marker = "\n  \"skills\": [],\n"
	before, after, ok := bytes.Cut(buf.Bytes(), []byte(marker))
	if !ok {
		return errors.New("registry encoding: skills field not found")
	}
	if _, err := w.Write(before); err != nil {
		return err
	}
	if len(r.Skills) == 0 {
		_, err := io.WriteString(w, marker)
		if err == nil {
			_, err = w.Write(after)
		}
		return err
	}
	if _, err := io.WriteString(w, "\n  \"skills\": [\n"); err != nil {
		return err
	}
	// Skills are encoded in parallel, a bounded batch at a time, and
	// written in order: the output is the same, the wall time lower, and
	// at most two batches of encoded skills are held in memory. The next
	// batch is encoded while one is written, and the two sets of buffers
	// are reused, so the 24 MB registry of a large root does not cost 24
	// MB of freshly touched memory.
	const batch = 64
	type batchBufs struct {
		out  [batch][]byte
		errs [batch]error
	}
	var sets [2]batchBufs
	encode := func(b *batchBufs, start int) {
		parallelFor(start, min(start+batch, len(r.Skills)), func(i int) {
			b.out[i-start], b.errs[i-start] = appendSkillJSON(b.out[i-start][:0], &r.Skills[i])
		})
	}
	encode(&sets[0], 0)
	for k, start := 0, 0; start < len(r.Skills); k, start = k+1, start+batch {
		cur := &sets[k%2]
		var next sync.WaitGroup
		if start+batch < len(r.Skills) {
			next.Go(func() { encode(&sets[(k+1)%2], start+batch) })
		}
		err := writeBatch(w, cur.out[:], cur.errs[:], start, min(start+batch, len(r.Skills)), len(r.Skills))
		next.Wait()
		if err != nil {
			return err
		}
	}
	if _, err := io.WriteString(w, "  ],\n"); err != nil {
		return err
	}
	_, err := w.Write(after)
	return err
}

// writeBatch writes the encoded skills [start, end) of a registry of n.
func writeBatch(w io.Writer, out [][]byte, errs []error, start, end, n int) error {
	for i := start; i < end; i++ {
		if errs[i-start] != nil {
			return errs[i-start]
		}
		sep := ",\n"
		if i == n-1 {
			sep = "\n"
		}
		if _, err := io.WriteString(w, "    "); err != nil {
			return err
		}
		if _, err := w.Write(out[i-start]); err != nil {
			return err
		}
		if _, err := io.WriteString(w, sep); err != nil {
			return err
		}
	}
	return nil
}

// parallelFor calls f for every i in [start, end) on a goroutine per CPU
// and returns when all calls have. Indices come from a counter: handing
// each one over a channel cost more than the work of a small skill.
func parallelFor(start, end int, f func(i int)) {
	var wg sync.WaitGroup
	var next atomic.Int64
	next.Store(int64(start))
	for range min(runtime.GOMAXPROCS(0), end-start) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < end; i = int(next.Add(1) - 1) {
				f(i)
			}
		})
	}
	wg.Wait()
}

// ReadRegistry loads a skill-registry.json written by a run, restoring
// what the in-memory form keeps beside the JSON (each skill's root
// precedence), so lookups and the catalog behave as at run start.
func ReadRegistry(path string) (*Registry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return DecodeRegistry(data)
}

// DecodeRegistry reads a registry snapshot from its bytes (a caller that
// checked them against a digest first).
func DecodeRegistry(data []byte) (*Registry, error) {
	var reg Registry
	if err := artifacts.DecodeArtifact(data, RegistryType, RegistryVersion, &reg); err != nil {
		return nil, err
	}
	for i := range reg.Skills {
		s := &reg.Skills[i]
		root, dir := s.Root, s.SkillDir
		if s.LinkedFrom != nil {
			root, dir = s.LinkedFrom.Root, s.LinkedFrom.Path
		}
		for j, r := range reg.Roots {
			if r.Path == root {
				s.rootIndex = j
			}
		}
		if rel, err := filepath.Rel(root, dir); err == nil {
			s.relDir = filepath.ToSlash(rel)
		}
	}
	return &reg, nil
}
