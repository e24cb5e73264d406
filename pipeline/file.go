// Package pipeline runs a phase pipeline: phases that are each one
// `harness run`, in dependency order, each reading what the phases it
// needs produced, with one record of the whole and a resume that does not
// repeat what succeeded.
package pipeline

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/egress"
	"github.com/harness-dev/harness/internal/docschema"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/yamlsafe"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Schema is the JSON Schema of a pipeline file, published beside this
// package (pipeline.schema.json) for editors and CI linters.
//
//go:embed pipeline.schema.json
var Schema []byte

// maxFile bounds a pipeline file: it is configuration, not data.
const maxFile = 1 << 20

// File is a parsed, checked pipeline file.
type File struct {
	Path     string           // absolute
	Dir      string           // what relative paths in it are relative to
	Digest   artifacts.Digest // of its bytes
	Defaults Defaults
	Vars     map[string]string
	Phases   []Phase // in file order
	// unit is what a phase is called in messages: "phase", or "task" in
	// a batch.
	unit string

	ast *ast.File // for the line of a problem
	// mismatch is what the schema refused, told with check's problems.
	mismatch *schemaMismatch
}

// Phase is one phase as the file declares it.
type Phase struct {
	Name              string   `json:"name"`
	Prompt            string   `json:"prompt,omitempty"`
	PromptFile        string   `json:"prompt-file,omitempty"`
	Needs             []string `json:"needs,omitempty"`
	Skills            []string `json:"skills,omitempty"`
	AllowTools        []string `json:"allow-tools,omitempty"`
	AllowSkillScripts []string `json:"allow-skill-scripts,omitempty"`
	AllowNetwork      []string `json:"allow-network,omitempty"`
	AllowCommands     []string `json:"allow-commands,omitempty"`
	ConfirmTools      []string `json:"confirm-tools,omitempty"`
	OutputSchema      string   `json:"output-schema,omitempty"`
	Attach            []string `json:"attach,omitempty"`
	Model             string   `json:"model,omitempty"`
	Tier              string   `json:"tier,omitempty"`
	PromptRole        string   `json:"prompt-role,omitempty"`
	MaxTurns          *int     `json:"max-turns,omitempty"`
	MaxTokens         int64    `json:"max-tokens,omitempty"`
	Timeout           string   `json:"timeout,omitempty"`
	// Workspace and ExternalSkillsRoot are a batch task's own (a
	// pipeline's schema has no such phase fields): tasks that must not
	// share files or skills, such as the cells of an eval. A task's own
	// roots replace every root of the defaults.
	Workspace          string   `json:"workspace,omitempty"`
	ExternalSkillsRoot []string `json:"external-skills-root,omitempty"`

	// line is where the phase starts in the file and index its place in
	// the phases list, for messages.
	line, index int
	// prompt is the parsed template (from Prompt or PromptFile);
	// readsPhases says it mentions .phases, i.e. earlier model output.
	prompt      *template.Template
	readsPhases bool
	// vars are a batch task's own (its vars and matrix values), over the
	// file's.
	vars map[string]string
}

// Load reads, validates and checks a pipeline file. Every problem found is
// reported at once, each with its line, as a usage error (exit 2).
func Load(path string, vars map[string]string) (*File, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, outcome.Usage("pipeline_file_invalid", "%s: %v", path, err)
	}
	data, err := readBounded(abs)
	if err != nil {
		return nil, outcome.Usage("pipeline_file_invalid", "pipeline file %s: %v", path, err)
	}
	f, err := parse(data, path)
	if err != nil {
		return nil, err
	}
	f.Path, f.Dir, f.Digest = abs, filepath.Dir(abs), artifacts.DigestBytes(data)
	for k, v := range vars {
		f.Vars[k] = v
	}
	if err := f.check(path); err != nil {
		return nil, err
	}
	return f, nil
}

// readBounded reads a file the pipeline names (the pipeline file, a
// batch's tasks, a phase's prompt or schema): configuration, at most
// maxFile bytes.
func readBounded(path string) ([]byte, error) {
	return artifacts.ReadRegular(path, maxFile)
}

// schemaMismatch is a file the schema refuses: its problems, each with its
// line, told together with what the file's other checks find.
type schemaMismatch struct {
	schemaFile string
	problems   []string
}

func (e *schemaMismatch) Error() string {
	return "does not match the schema (" + e.schemaFile + ")"
}

// decodeChecked decodes YAML, validates it against a schema (naming the
// line of each problem) and decodes it into v. A document the schema
// refuses is still decoded as far as it can be, with a *schemaMismatch,
// so that the file's other problems are found in the same pass.
func decodeChecked(data []byte, name string, sch *jsonschema.Schema, schemaFile string, v any) (*ast.File, error) {
	// Bounded before the parser and the decoder see it: a few lines of
	// nested aliases expand to billions of nodes.
	if err := yamlsafe.Check(name, data, yamlsafe.Limits{Bytes: maxFile}); err != nil {
		return nil, outcome.Usage("pipeline_file_invalid", "%v", err)
	}
	astFile, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, outcome.Usage("pipeline_file_invalid", "%s: invalid YAML: %s", name, yamlMessage(err))
	}
	var doc any
	if err := yaml.UnmarshalWithOptions(data, &doc, yaml.UseJSONUnmarshaler()); err != nil {
		return nil, outcome.Usage("pipeline_file_invalid", "%s: invalid YAML: %s", name, yamlMessage(err))
	}
	exact := yamlsafe.AsJSON(doc, false)
	doc = yamlsafe.AsJSON(doc, true)
	var mismatch *schemaMismatch
	if err := sch.Validate(doc); err != nil {
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			return nil, outcome.Usage("pipeline_file_invalid", "%s: %v", name, err)
		}
		mismatch = &schemaMismatch{schemaFile: schemaFile, problems: docschema.Lines(ve, name, func(loc []string) int { return yamlsafe.LineOf(astFile, loc) }, oneOfPrompt)}
	}
	// The document the schema accepted is the one decoded, through
	// encoding/json: the same reading as a JSONL task, and embedded
	// structs (a Task's Phase) are filled as JSON fills them.
	// Without HTML escapes (plainJSON): an extra body's "<" goes to the
	// endpoint as written, as --extra-body's does.
	js, err := plainJSON(exact)
	if err == nil {
		err = json.Unmarshal(js, v)
	}
	switch {
	case err != nil && mismatch != nil:
		return nil, mismatch.usage(name, nil)
	case err != nil:
		return nil, outcome.Usage("pipeline_file_invalid", "%s: %v", name, err)
	case mismatch != nil:
		return astFile, mismatch
	}
	return astFile, nil
}

// usage is the one refusal of a file: the schema's problems and the
// others, each with its line, in line order.
func (e *schemaMismatch) usage(name string, more []string) error {
	lines := append(slices.Clone(e.problems), more...)
	slices.SortStableFunc(lines, func(a, b string) int { return lineNumber(a) - lineNumber(b) })
	lines = slices.Compact(lines)
	return outcome.Usage("pipeline_file_invalid", "%s does not match the schema (%s):\n%s", name, e.schemaFile, strings.Join(lines, "\n"))
}

// lineNumber is the line a problem line names ("  file:12: ..."), 0 if none.
func lineNumber(problem string) int {
	_, rest, _ := strings.Cut(strings.TrimSpace(problem), ":")
	n, _ := strconv.Atoi(strings.SplitN(rest, ":", 2)[0])
	return n
}

// parse decodes a pipeline file into File.
func parse(data []byte, name string) (*File, error) {
	var raw struct {
		Defaults Defaults       `json:"defaults"`
		Vars     map[string]any `json:"vars"`
		Phases   []Phase        `json:"phases"`
	}
	astFile, err := decodeChecked(data, name, docschema.Embedded("pipeline.schema.json", Schema, ""), "pipeline/pipeline.schema.json", &raw)
	var mismatch *schemaMismatch
	if err != nil && !errors.As(err, &mismatch) {
		return nil, err
	}
	f := &File{Defaults: raw.Defaults, Vars: map[string]string{}, Phases: raw.Phases, ast: astFile, unit: "phase"}
	for k, v := range raw.Vars {
		f.Vars[k] = fmt.Sprint(v)
	}
	for i := range f.Phases {
		f.Phases[i].line = yamlsafe.LineOf(astFile, []string{"phases", strconv.Itoa(i)})
		f.Phases[i].index = i
	}
	f.mismatch = mismatch
	return f, nil
}

func yamlMessage(err error) string {
	return yamlsafe.Reason(err)
}

// check applies what the schema cannot say: unique names, needs that
// exist and form no cycle, prompts that parse, durations, prompt files.
func (f *File) check(name string) error {
	type problem struct {
		line int
		msg  string
	}
	var probs []problem
	add := func(line int, format string, args ...any) {
		probs = append(probs, problem{line, fmt.Sprintf("  %s:%d: %s", name, line, fmt.Sprintf(format, args...))})
	}
	at := func(p *Phase, field string) int {
		return yamlsafe.LineOf(f.ast, []string{f.unit + "s", strconv.Itoa(p.index), field})
	}
	// A batch's tasks share a template: its problems are told for the
	// first tasks, and counted for the rest.
	const maxTemplateProblems = 20
	templateProblems := 0
	addTemplate := func(line int, msg string) {
		if templateProblems++; templateProblems <= maxTemplateProblems {
			add(line, "%s", msg)
		}
	}
	for _, p := range settingProblems(f.Defaults) {
		add(yamlsafe.LineOf(f.ast, []string{"defaults", p.key}), "defaults.%s: %s", p.key, p.msg)
	}
	seen := map[string]int{}
	for _, p := range f.Phases {
		if l, dup := seen[p.Name]; dup {
			add(p.line, "%s %q is defined twice (first on line %d); phase names must be unique", f.unit, p.Name, l)
		}
		seen[p.Name] = p.line
	}
	for i := range f.Phases {
		p := &f.Phases[i]
		for _, n := range p.Needs {
			if _, ok := seen[n]; !ok {
				add(at(p, "needs"), "%s %q needs %q, which is not a phase of this file", f.unit, p.Name, n)
			} else if n == p.Name {
				add(at(p, "needs"), "%s %q needs itself", f.unit, p.Name)
			}
		}
		text, source := p.Prompt, "prompt"
		unread := false
		if p.PromptFile != "" {
			b, err := readBounded(f.abs(p.PromptFile))
			if err != nil {
				add(at(p, "prompt-file"), "%s %q: prompt-file %s: %v", f.unit, p.Name, p.PromptFile, err)
				unread = true
			}
			text, source = string(b), "prompt-file "+p.PromptFile
		}
		t, err := template.New(p.Name).Option("missingkey=error").Parse(text)
		if err != nil {
			add(at(p, strings.Fields(source)[0]), "%s %q: %s is not a valid template: %v", f.unit, p.Name, source, err)
		}
		if strings.TrimSpace(text) == "" && !unread {
			add(p.line, "%s %q has no prompt: give prompt or prompt-file", f.unit, p.Name)
		}
		p.prompt = t
		p.readsPhases = strings.Contains(text, ".phases")
		// A template that does not parse still has its references
		// checked, action by action, so that fixing the syntax does not
		// reveal a second round of problems.
		for _, msg := range f.referenceProblems(t, err, text, p, strings.Fields(source)[0]) {
			addTemplate(at(p, strings.Fields(source)[0]), msg)
		}
		for i, a := range p.Attach {
			at, err := template.New("attach").Option("missingkey=error").Parse(a)
			if err != nil {
				add(yamlsafe.LineOf(f.ast, []string{f.unit + "s", strconv.Itoa(p.index), "attach", strconv.Itoa(i)}), "%s %q: attach %q is not a valid template: %v", f.unit, p.Name, a, err)
			}
			for _, msg := range f.referenceProblems(at, err, a, p, fmt.Sprintf("attach %q", a)) {
				addTemplate(yamlsafe.LineOf(f.ast, []string{f.unit + "s", strconv.Itoa(p.index), "attach"}), msg)
			}
		}
		if p.Model != "" && p.Tier != "" {
			add(at(p, "tier"), "%s %q names both a model and a tier: give one (the tier's model is the operator's --tier %s=MODEL)", f.unit, p.Name, p.Tier)
		}
		if p.Timeout != "" {
			if _, err := time.ParseDuration(p.Timeout); err != nil {
				add(at(p, "timeout"), "%s %q: timeout %q: %v", f.unit, p.Name, p.Timeout, err)
			}
		}
		if _, err := egress.ParseRules(p.AllowNetwork); err != nil {
			add(at(p, "allow-network"), "%s %q: allow-network: %v", f.unit, p.Name, err)
		}
	}
	if templateProblems > maxTemplateProblems {
		add(1, "... and %d more template problems like those above", templateProblems-maxTemplateProblems)
	}
	// A cycle is looked for whatever else is wrong; a phase that needs
	// itself is told above, and a need that names no phase leads nowhere.
	if cyc := cycle(withoutSelfNeeds(f.Phases)); cyc != nil {
		add(f.phase(cyc[0]).line, "the needs form a cycle: %s", strings.Join(cyc, " -> "))
	}
	slices.SortStableFunc(probs, func(a, b problem) int { return a.line - b.line })
	lines := make([]string, len(probs))
	for i, p := range probs {
		lines[i] = p.msg
	}
	if f.mismatch != nil {
		return f.mismatch.usage(name, lines)
	}
	if len(probs) > 0 {
		return outcome.Usage("pipeline_file_invalid", "%s has problems:\n%s", name, strings.Join(lines, "\n"))
	}
	return nil
}

// referenceProblems are the template problems of a prompt or attach
// text: of its parsed template t, or, when it did not parse (err), of
// each of its actions that parses alone.
func (f *File) referenceProblems(t *template.Template, err error, text string, p *Phase, source string) []string {
	if err == nil {
		return f.templateProblems(t, p, source)
	}
	var out []string
	for _, m := range templateAction.FindAllStringSubmatch(text, -1) {
		at, err := template.New(p.Name).Option("missingkey=error").Parse("{{" + m[1] + "}}")
		if err != nil {
			continue
		}
		for _, msg := range f.templateProblems(at, p, source) {
			if !slices.Contains(out, msg) {
				out = append(out, msg)
			}
		}
	}
	return out
}

// templateAction is one {{ ... }} of a template, trim markers included.
var templateAction = regexp.MustCompile(`(?s)\{\{(.*?)\}\}`)

// withoutSelfNeeds is phases with no phase needing itself.
func withoutSelfNeeds(ps []Phase) []Phase {
	out := slices.Clone(ps)
	for i := range out {
		out[i].Needs = slices.DeleteFunc(slices.Clone(out[i].Needs), func(n string) bool { return n == out[i].Name })
	}
	return out
}

// abs resolves a path from the file against the file's directory.
func (f *File) abs(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(f.Dir, p)
}

func (f *File) phase(name string) *Phase {
	for i := range f.Phases {
		if f.Phases[i].Name == name {
			return &f.Phases[i]
		}
	}
	return nil
}

// oneOfPrompt is how a failed oneOf is told: the schema's only oneOf is a
// unit's prompt source.
const oneOfPrompt = "give exactly one of prompt and prompt-file"
