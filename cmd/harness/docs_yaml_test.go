package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/rhysd/actionlint"

	"github.com/harness-dev/harness/eval"
	"github.com/harness-dev/harness/pipeline"
	"github.com/harness-dev/harness/runopts"
	"github.com/harness-dev/harness/schedule"
	"github.com/harness-dev/harness/skills"
	"github.com/harness-dev/harness/yamlsafe"
)

// docBlock is one fenced code block of a doc.
type docBlock struct {
	file string // relative to the repository
	line int    // of the opening fence
	lang string // the info string's first word
	kind string // its second word: what the block is, for YAML
	body string
}

func (b docBlock) String() string { return fmt.Sprintf("%s:%d", b.file, b.line) }

// docBlocks are the fenced blocks of README.md and docs/*.md.
func docBlocks(t *testing.T) []docBlock {
	t.Helper()
	files, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	var out []docBlock
	for _, f := range append([]string{"../../README.md"}, files...) {
		blocks, err := fencedBlocks(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, fb := range blocks {
			b := docBlock{file: strings.TrimPrefix(f, "../../"), line: fb.line, body: fb.body}
			words := strings.Fields(fb.info)
			if len(words) > 0 {
				b.lang = words[0]
			}
			if len(words) > 1 {
				b.kind = words[1]
			}
			out = append(out, b)
		}
	}
	return out
}

// yamlKinds say how each kind of YAML block in the docs is checked. A
// YAML block names its kind after the language (```yaml workflow), which
// a Markdown renderer does not show; a block without one, or with a kind
// this table lacks, fails, so no example can escape the check its kind
// needs.
var yamlKinds = map[string]func(t *testing.T, b docBlock){
	// A whole GitHub Actions workflow: actionlint, and every upload of a
	// hidden path includes hidden files.
	"workflow": func(t *testing.T, b docBlock) { checkWorkflow(t, b.String(), []byte(b.body)) },
	// A whole --config file, read by the readers every command uses.
	"config": checkConfigBlock,
	// A whole --command-grant file.
	"grant": checkGrantBlock,
	// A whole pipeline file: what harness pipeline check does.
	"pipeline": checkPipelineBlock,
	// A whole evals/evals.yaml: read as `harness eval` reads it, beside a
	// skill; schema files its checks name are given as empty schemas.
	"eval": checkEvalBlock,
	// A fragment: keys of a SKILL.md's frontmatter (metadata.harness.*).
	// The test gives it a name and a description, and the skill must
	// validate strictly with no diagnostic; a schedule it declares must
	// make a workflow that passes the workflow check.
	"frontmatter": checkFrontmatterBlock,
}

// Every YAML example of the README and the docs works as written: each is
// checked by what reads its kind.
func TestDocsYAMLBlocks(t *testing.T) {
	seen := 0
	for _, b := range docBlocks(t) {
		if b.lang != "yaml" && b.lang != "yml" {
			continue
		}
		seen++
		check, ok := yamlKinds[b.kind]
		if !ok {
			t.Errorf("%s: a YAML block names its kind after the language (one of %s), not %q", b, strings.Join(slices.Sorted(mapKeys(yamlKinds)), ", "), b.kind)
			continue
		}
		t.Run(fmt.Sprintf("%s:%d/%s", b.file, b.line, b.kind), func(t *testing.T) {
			var v any
			if err := yamlsafe.Unmarshal(b.String(), []byte(b.body), &v, yaml.Strict()); err != nil {
				t.Fatalf("not YAML: %v", err)
			}
			check(t, b)
		})
	}
	if seen == 0 {
		t.Fatal("found no YAML block: is the test reading the docs?")
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// checkWorkflow lints a workflow with actionlint and checks that every
// actions/upload-artifact step whose path has a hidden component sets
// include-hidden-files: from v4.4.0 on the action leaves out every file
// and directory whose name starts with a dot unless told.
func checkWorkflow(t *testing.T, name string, b []byte) {
	t.Helper()
	l, err := actionlint.NewLinter(io.Discard, &actionlint.LinterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	errs, err := l.Lint(name, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range errs {
		t.Errorf("actionlint: %s", e.Error())
	}
	var w struct {
		Jobs map[string]struct {
			Steps []struct {
				Uses string         `yaml:"uses"`
				With map[string]any `yaml:"with"`
				Run  string         `yaml:"run"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(b, &w); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	for id, j := range w.Jobs {
		for _, st := range j.Steps {
			if st.Run != "" {
				checkShell(t, name, id, st.Run)
			}
			if !strings.HasPrefix(st.Uses, "actions/upload-artifact@") {
				continue
			}
			p := fmt.Sprint(st.With["path"])
			if hiddenPath(p) && fmt.Sprint(st.With["include-hidden-files"]) != "true" {
				t.Errorf("%s: job %s uploads %s without include-hidden-files: true, so the artifact leaves it out", name, id, p)
			}
		}
	}
	if t.Failed() {
		t.Logf("%s", b)
	}
}

// checkShell parses a run step's script as the runner's bash would
// (actionlint checks its shell only with shellcheck, which may be
// missing): a GitHub expression is text GitHub replaces before bash
// reads the script.
func checkShell(t *testing.T, name, job, script string) {
	t.Helper()
	script = ghExpression.ReplaceAllString(script, "x")
	if out, err := exec.Command("bash", "--noprofile", "--norc", "-n", "-c", script).CombinedOutput(); err != nil {
		t.Errorf("%s: job %s: a run step is not bash: %v\n%s", name, job, err, out)
	}
}

var ghExpression = regexp.MustCompile(`\$\{\{[^}]*\}\}`)

// hiddenPath reports whether a path of upload-artifact (one per line)
// has a component starting with a dot.
func hiddenPath(p string) bool {
	for _, line := range strings.Split(p, "\n") {
		for _, part := range strings.Split(path.Clean(strings.TrimPrefix(strings.TrimSpace(line), "!")), "/") {
			if strings.HasPrefix(part, ".") && part != "." && part != ".." {
				return true
			}
		}
	}
	return false
}

func checkConfigBlock(t *testing.T, b docBlock) {
	f := filepath.Join(t.TempDir(), "harness.yaml")
	if err := os.WriteFile(f, []byte(b.body), 0o600); err != nil {
		t.Fatal(err)
	}
	cf := &configFile{path: f, data: []byte(b.body)}
	if _, err := cf.runSettings(); err != nil {
		t.Error(err)
	}
	if _, err := cf.trustedSources(); err != nil {
		t.Error(err)
	}
	if _, err := cf.skillSources(); err != nil {
		t.Error(err)
	}
}

func checkEvalBlock(t *testing.T, b docBlock) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "evals"), 0o755); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		SkillName string `yaml:"skill_name"`
		Evals     []struct {
			Checks []map[string]any `yaml:"checks"`
		} `yaml:"evals"`
	}
	if err := yaml.Unmarshal([]byte(b.body), &doc); err != nil {
		t.Fatal(err)
	}
	name := cmp.Or(doc.SkillName, "example")
	skill := "---\nname: " + name + "\ndescription: An example.\n---\nBody.\n"
	files := map[string]string{"SKILL.md": skill, "evals/evals.yaml": b.body}
	for _, e := range doc.Evals {
		for _, c := range e.Checks {
			for _, k := range []string{"answer-schema", "schema"} {
				if v, ok := c[k].(string); ok {
					files[filepath.Join("evals", v)] = "{}"
				}
			}
		}
	}
	for n, body := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, n)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, n), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := eval.Load(eval.LoadOptions{Path: dir}); err != nil {
		t.Fatal(err)
	}
}

func checkPipelineBlock(t *testing.T, b docBlock) {
	dir := t.TempDir()
	f := filepath.Join(dir, "pipeline.yaml")
	if err := os.WriteFile(f, []byte(b.body), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := pipeline.Load(f, nil); err != nil {
		t.Fatal(err)
	}
}

func checkGrantBlock(t *testing.T, b docBlock) {
	f := filepath.Join(t.TempDir(), "grant.yaml")
	if err := os.WriteFile(f, []byte(b.body), 0o600); err != nil {
		t.Fatal(err)
	}
	o := runopts.Options{CommandGrant: f}
	if err := o.ReadCommandGrant(); err != nil {
		t.Fatal(err)
	}
}

func checkFrontmatterBlock(t *testing.T, b docBlock) {
	root := t.TempDir()
	dir := filepath.Join(root, "example")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	md := "---\nname: example\ndescription: An example from the docs. Use to check them.\n" + b.body + "---\nBody.\n"
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	v, err := skills.Validate(context.Background(), dir, skills.ValidateOptions{Strict: true, Check: checkSkill})
	if err != nil {
		t.Fatal(err)
	}
	// An info diagnostic is a note (metadata.harness is a mapping, which
	// the specification's letter does not foresee); errors and warnings
	// are what a reader would copy into a skill that is refused or warned
	// about.
	diags := v.Diagnostics
	for _, s := range v.Skills {
		diags = append(diags, s.Diagnostics...)
	}
	for _, d := range diags {
		if d.Severity != skills.SeverityInfo {
			t.Errorf("%s %s: %s", d.Severity, d.Code, d.Detail)
		}
	}
	reg, err := skills.Scan(context.Background(), skills.ScanOptions{Roots: []string{root}})
	if err != nil {
		t.Fatal(err)
	}
	entries, errs := schedule.Entries(reg)
	for _, err := range errs {
		t.Error(err)
	}
	if len(entries) == 0 {
		return
	}
	wf, err := schedule.GitHub(entries, schedule.GitHubOptions{SkillsRoots: []string{"skills"}, Args: []string{"--model", "gpt-4.1-mini"}})
	if err != nil {
		t.Fatal(err)
	}
	checkWorkflow(t, "harness schedule github", wf)
}

// Every workflow a generator prints passes the check the docs' workflows
// pass: harness schedule github, for skills of every schedule shape.
func TestGeneratedWorkflowsLint(t *testing.T) {
	root := t.TempDir()
	for name, sched := range map[string]string{
		"inbox":  `{cron: "0 7 * * 1-5", prompt: "Triage the inbox.", timezone: "Europe/Paris"}`,
		"report": `{cron: "@weekly", prompt: "Write the weekly report.\nKeep it short."}`,
		"utc":    `{cron: "30 18 * * 5", prompt: "Close the week.", timezone: "UTC"}`,
	} {
		dir := filepath.Join(root, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		md := "---\nname: " + name + "\ndescription: A scheduled skill. Use on its schedule.\nmetadata:\n  harness:\n    schedule: " + sched + "\n---\nBody.\n"
		if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	reg, err := skills.Scan(context.Background(), skills.ScanOptions{Roots: []string{root}})
	if err != nil {
		t.Fatal(err)
	}
	entries, errs := schedule.Entries(reg)
	if len(errs) > 0 || len(entries) != 3 {
		t.Fatalf("entries %d, errors %v", len(entries), errs)
	}
	for _, o := range []schedule.GitHubOptions{
		{SkillsRoots: []string{"skills"}},
		{SkillsRoots: []string{".agents/skills", "team skills"}, Args: []string{"--model", "gpt-4.1-mini", "--max-turns", "20"}, Secret: "MODEL_KEY"},
	} {
		wf, err := schedule.GitHub(entries, o)
		if err != nil {
			t.Fatal(err)
		}
		checkWorkflow(t, "harness schedule github", wf)
	}
}
