package eval

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/parser"
	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/internal/docschema"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/yamlsafe"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Schema is the JSON Schema of an eval file (eval.schema.json): skill-
// creator's evals.json with harness's checks.
//
//go:embed eval.schema.json
var Schema []byte

// TriggersSchema is that of evals/triggers.json.
//
//go:embed triggers.schema.json
var TriggersSchema []byte

// maxEvalFile bounds an eval or triggers file: it is configuration.
const maxEvalFile = 1 << 20

// Names of the files a skill's evals/ directory holds.
const (
	EvalsJSON    = "evals.json"
	EvalsYAML    = "evals.yaml"
	TriggersJSON = "triggers.json"
)

// LoadOptions say where a suite is.
type LoadOptions struct {
	// Path is a skill directory (its evals/evals.json or evals/evals.yaml
	// and evals/triggers.json are read) or an eval file.
	Path string
	// SkillDir is the skill an eval file measures, when the file does not
	// lie in that skill's evals/ directory ("" = the directory above
	// evals/, which must hold SKILL.md).
	SkillDir string
	// Triggers is a triggers file other than evals/triggers.json.
	Triggers string
}

// Load reads a suite. Every problem of a file is a usage error naming it.
func Load(o LoadOptions) (*Suite, error) {
	abs, err := filepath.Abs(o.Path)
	if err != nil {
		return nil, fileProblem("%s: %v", o.Path, err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, fileProblem("%s: %v (give a skill directory or an eval file)", o.Path, err)
	}
	s := &Suite{}
	if st.IsDir() {
		s.SkillDir = abs
		var found []string
		for _, n := range []string{EvalsJSON, EvalsYAML} {
			if _, err := os.Lstat(filepath.Join(abs, "evals", n)); err == nil {
				found = append(found, filepath.Join("evals", n))
			}
		}
		switch len(found) {
		case 2:
			return nil, fileProblem("%s has both evals/%s and evals/%s: keep one, or name the file to read", o.Path, EvalsJSON, EvalsYAML)
		case 1:
			s.File = filepath.Join(abs, found[0])
		}
		if o.Triggers == "" {
			if _, err := os.Lstat(filepath.Join(abs, "evals", TriggersJSON)); err == nil {
				s.TriggersFile = filepath.Join(abs, "evals", TriggersJSON)
			}
		}
		if s.File == "" && s.TriggersFile == "" && o.Triggers == "" {
			return nil, fileProblem("%s has no evals/%s, evals/%s or evals/%s: write the evals first (docs/eval.md)", o.Path, EvalsJSON, EvalsYAML, TriggersJSON)
		}
	} else {
		s.File = abs
		s.SkillDir = s.Base()
	}
	if o.SkillDir != "" {
		if s.SkillDir, err = filepath.Abs(o.SkillDir); err != nil {
			return nil, fileProblem("--skill-dir %s: %v", o.SkillDir, err)
		}
	}
	if o.Triggers != "" {
		if s.TriggersFile, err = filepath.Abs(o.Triggers); err != nil {
			return nil, fileProblem("--triggers %s: %v", o.Triggers, err)
		}
	}
	if fi, err := os.Stat(filepath.Join(s.SkillDir, "SKILL.md")); err != nil || !fi.Mode().IsRegular() {
		return nil, fileProblem("%s holds no SKILL.md: an eval measures one skill; give its directory (or --skill-dir DIR for an eval file kept elsewhere)", s.SkillDir)
	}
	if s.File != "" {
		if err := s.readEvals(); err != nil {
			return nil, err
		}
	}
	if s.TriggersFile != "" {
		if err := s.readTriggers(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Base is what the suite's eval files name inputs relative to.
func (s *Suite) Base() string {
	if s.File == "" {
		return s.SkillDir
	}
	b := filepath.Dir(s.File)
	if filepath.Base(b) == "evals" {
		b = filepath.Dir(b)
	}
	return b
}

type evalFile struct {
	Version   int    `json:"version,omitempty"`
	SkillName string `json:"skill_name,omitempty"`
	Evals     []struct {
		ID             json.RawMessage `json:"id"`
		Name           string          `json:"eval_name,omitempty"`
		Prompt         string          `json:"prompt"`
		ExpectedOutput string          `json:"expected_output,omitempty"`
		Files          []string        `json:"files,omitempty"`
		Expectations   []string        `json:"expectations,omitempty"`
		Checks         []Check         `json:"checks,omitempty"`
	} `json:"evals"`
}

// readFile reads one of the suite's files. One inside the skill's
// directory is its author's and is read beneath it without following a
// link (a link out of the skill would have harness open what it names on
// the host; the copy of the skill refuses it too); one named from
// elsewhere is the operator's and is read as named.
func (s *Suite) readFile(path string) ([]byte, error) {
	rel, err := filepath.Rel(s.SkillDir, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return artifacts.ReadRegular(path, maxEvalFile)
	}
	b, err := artifacts.ReadBeneathAtMost(s.SkillDir, rel, maxEvalFile)
	if errors.Is(err, artifacts.ErrOutsideDir) {
		return nil, errors.New("it goes through a symbolic link, and a skill's own files are read only as themselves")
	}
	return b, err
}

func (s *Suite) readEvals() error {
	data, err := s.readFile(s.File)
	if err != nil {
		return fileProblem("eval file %s: %v", s.File, err)
	}
	s.Digest = artifacts.DigestBytes(data)
	var f evalFile
	if err := decode(s.File, data, "eval.schema.json", Schema, &f); err != nil {
		return err
	}
	s.SkillName = f.SkillName
	seen := map[string]bool{}
	// Cells are named by a lower-cased form of the id (cellPart): two
	// ids of one form would share a workspace and a run.
	parts := map[string]string{}
	var probs []string
	for i, e := range f.Evals {
		id := strings.Trim(string(e.ID), `"`)
		if _, err := strconv.Atoi(id); err != nil && !idPattern.MatchString(id) {
			probs = append(probs, fmt.Sprintf("evals[%d].id %s: give a number or a name of letters, digits, '.', '_' and '-'", i, e.ID))
			continue
		}
		if seen[id] {
			probs = append(probs, fmt.Sprintf("evals[%d].id %s: another eval has this id", i, id))
		} else if other, ok := parts[cellPart(id)]; ok {
			probs = append(probs, fmt.Sprintf("evals[%d].id %s: gives the same cell id as id %s: rename one", i, id, other))
		}
		seen[id] = true
		parts[cellPart(id)] = id
		ev := Eval{ID: id, Name: e.Name, Prompt: e.Prompt, ExpectedOutput: e.ExpectedOutput, Files: e.Files, Expectations: e.Expectations, Checks: e.Checks}
		for _, p := range ev.Files {
			if err := inputPath(p); err != nil {
				probs = append(probs, fmt.Sprintf("evals[%d] (id %s) files: %v", i, id, err))
			}
		}
		for j := range ev.Checks {
			if err := ev.Checks[j].prepare(filepath.Dir(s.File)); err != nil {
				probs = append(probs, fmt.Sprintf("evals[%d] (id %s) checks[%d]: %v", i, id, j, err))
			}
		}
		if len(ev.Expectations)+len(ev.Checks) == 0 {
			probs = append(probs, fmt.Sprintf("evals[%d] (id %s): no expectations and no checks, so nothing would be measured", i, id))
		}
		s.Evals = append(s.Evals, ev)
	}
	if len(probs) > 0 {
		return fileProblem("%s:\n  %s", s.File, strings.Join(probs, "\n  "))
	}
	return nil
}

var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// inputPath refuses an eval input that could name anything but a file
// below the eval's base directory: the copy into a cell's workspace checks
// again on the opened descriptors.
func inputPath(p string) error {
	switch {
	case filepath.IsAbs(p) || strings.HasPrefix(p, `\`):
		return fmt.Errorf("%q is absolute: name inputs relative to the skill's directory", p)
	case !filepath.IsLocal(p):
		return fmt.Errorf("%q leaves the skill's directory", p)
	case strings.ContainsAny(p, "\x00\n\r"):
		return fmt.Errorf("%q holds a control character", p)
	}
	return nil
}

func (s *Suite) readTriggers() error {
	data, err := s.readFile(s.TriggersFile)
	if err != nil {
		return fileProblem("triggers file %s: %v", s.TriggersFile, err)
	}
	s.TriggersDigest = artifacts.DigestBytes(data)
	var items []struct {
		Query         string `json:"query"`
		ShouldTrigger bool   `json:"should_trigger"`
	}
	if err := decode(s.TriggersFile, data, "triggers.schema.json", TriggersSchema, &items); err != nil {
		return err
	}
	for _, it := range items {
		s.Triggers = append(s.Triggers, Trigger{Query: it.Query, ShouldTrigger: it.ShouldTrigger})
	}
	return nil
}

// decode reads YAML (JSON is YAML) bounded before any parser sees it,
// checks it against the schema and decodes it strictly.
func decode(name string, data []byte, schemaName string, schema []byte, v any) error {
	if err := yamlsafe.Check(name, data, yamlsafe.Limits{Bytes: maxEvalFile}); err != nil {
		return fileProblem("%v", err)
	}
	var doc any
	if err := yaml.UnmarshalWithOptions(data, &doc, yaml.UseJSONUnmarshaler()); err != nil {
		return fileProblem("%s: not valid JSON or YAML: %s", name, yamlsafe.Reason(err))
	}
	doc = yamlsafe.AsJSON(doc, true)
	if err := docschema.Embedded(schemaName, schema, "").Validate(doc); err != nil {
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			return fileProblem("%s: %v", name, err)
		}
		// Parsed again only to place each problem on its line.
		f, _ := parser.ParseBytes(data, 0)
		lines := docschema.Lines(ve, name, func(loc []string) int { return yamlsafe.LineOf(f, loc) }, "")
		return fileProblem("%s does not match the schema (eval/%s):\n%s", name, schemaName, strings.Join(lines, "\n"))
	}
	js, err := json.Marshal(doc)
	if err != nil {
		return fileProblem("%s: %v", name, err)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fileProblem("%s: %v", name, err)
	}
	return nil
}

func fileProblem(format string, args ...any) error {
	return outcome.Usage("eval_file_invalid", format, args...)
}

// prepare checks what a check names beyond its shape (a regex that
// compiles, a schema file that is one) and reads its schema.
func (c *Check) prepare(dir string) error {
	for _, re := range []*string{c.AnswerMatches, c.Matches} {
		if re != nil {
			if _, err := regexp.Compile(*re); err != nil {
				return fmt.Errorf("regular expression %q: %v", *re, err)
			}
		}
	}
	// The schema admits a check's own keys beside another kind's (a
	// file beside answer-contains): one that would be silently left
	// out is refused instead.
	fileTest := c.Exists != nil || c.Contains != nil || c.Matches != nil || c.Schema != ""
	switch kind := c.Kind(); {
	case c.File != "" && !strings.HasPrefix(kind, "file-"):
		return fmt.Errorf("file goes with exists, contains, matches or schema, not with %s: make them two checks", kind)
	case c.File == "" && fileTest:
		return fmt.Errorf("exists, contains, matches and schema test a workspace file: name it with file, or make them two checks")
	}
	if c.File != "" {
		if err := inputPath(c.File); err != nil {
			return fmt.Errorf("file: %v", err)
		}
	}
	if s := firstNonEmpty(c.AnswerSchema, c.Schema); s != "" {
		if err := inputPath(s); err != nil {
			return fmt.Errorf("schema: %v (it is relative to the eval file)", err)
		}
		data, err := readBeneathAtMost(dir, s, maxEvalFile)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("schema %s: no such file next to the eval file", s)
			}
			return fmt.Errorf("schema %s: %v", s, err)
		}
		if _, err := docschema.Compile("check.schema.json", data); err != nil {
			return fmt.Errorf("schema %s: not a JSON Schema: %v", s, err)
		}
		c.schemaBytes = data
	}
	return nil
}

func firstNonEmpty(xs ...string) string {
	for _, x := range xs {
		if x != "" {
			return x
		}
	}
	return ""
}
