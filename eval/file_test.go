package eval

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/testenv"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
)

// published is trailofbits' supply-chain-risk-auditor plugin as its
// repository lays it out: evals/ beside skills/<name>/.
const published = "testdata/published/supply-chain-risk-auditor"

// TestLoadPublished reads a skill-creator eval file as its author
// published it, kept outside the skill's own directory.
func TestLoadPublished(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(published, "evals", EvalsJSON))
	testenv.Must(t, err)
	var want struct {
		SkillName string `json:"skill_name"`
		Evals     []struct {
			ID           int      `json:"id"`
			Name         string   `json:"eval_name"`
			Prompt       string   `json:"prompt"`
			Expected     string   `json:"expected_output"`
			Files        []string `json:"files"`
			Expectations []string `json:"expectations"`
		} `json:"evals"`
	}
	testenv.Must(t, json.Unmarshal(raw, &want))
	skillDir := filepath.Join(published, "skills", "supply-chain-risk-auditor")
	base, _ := filepath.Abs(published)
	for _, path := range []string{filepath.Join(published, "evals", EvalsJSON), published} {
		t.Run(filepath.Base(path), func(t *testing.T) {
			s, err := Load(LoadOptions{Path: path, SkillDir: skillDir})
			if err != nil {
				t.Fatal(err)
			}
			if abs, _ := filepath.Abs(skillDir); s.SkillDir != abs {
				t.Errorf("SkillDir %s, want %s", s.SkillDir, abs)
			}
			if s.Base() != base {
				t.Errorf("Base %s, want the directory holding evals/ (%s)", s.Base(), base)
			}
			if s.SkillName != "supply-chain-risk-auditor" || len(s.Evals) != 3 {
				t.Fatalf("skill %q with %d evals", s.SkillName, len(s.Evals))
			}
			for i, ev := range s.Evals {
				w := want.Evals[i]
				if ev.ID != []string{"0", "1", "2"}[i] || ev.Name != w.Name || ev.Prompt != w.Prompt || ev.ExpectedOutput != w.Expected {
					t.Errorf("eval %d read as id %q name %q", i, ev.ID, ev.Name)
				}
				if !slices.Equal(ev.Files, w.Files) || !slices.Equal(ev.Expectations, w.Expectations) || len(ev.Checks) != 0 {
					t.Errorf("eval %s: files %q, %d expectations, %d checks", ev.ID, ev.Files, len(ev.Expectations), len(ev.Checks))
				}
				for _, f := range ev.Files {
					if fi, err := os.Stat(filepath.Join(s.Base(), f)); err != nil || !fi.Mode().IsRegular() {
						t.Errorf("eval %s names %s, not a file beneath %s: %v", ev.ID, f, s.Base(), err)
					}
				}
			}
		})
	}
	// Without SkillDir the directory holding evals/ must be the skill,
	// and here it is not.
	_, err = Load(LoadOptions{Path: filepath.Join(published, "evals", EvalsJSON)})
	wantUsage(t, err, "eval_file_invalid", "holds no SKILL.md")
}

// TestCopyPublishedInputs: each eval's fixture lands in its cell's
// workspace under the path its prompt names.
func TestCopyPublishedInputs(t *testing.T) {
	s, err := Load(LoadOptions{Path: published, SkillDir: filepath.Join(published, "skills", "supply-chain-risk-auditor")})
	testenv.Must(t, err)
	for _, ev := range s.Evals {
		ws := t.TempDir()
		if err := copyInputs(s.Base(), ev.Files, ws, t.TempDir()); err != nil {
			t.Fatalf("eval %s: %v", ev.ID, err)
		}
		for _, f := range ev.Files {
			if !strings.Contains(ev.Prompt, filepath.Dir(f)) {
				t.Errorf("eval %s: the prompt does not name %s", ev.ID, filepath.Dir(f))
			}
			got, err := os.ReadFile(filepath.Join(ws, f))
			testenv.Must(t, err)
			src, err := os.ReadFile(filepath.Join(s.Base(), f))
			testenv.Must(t, err)
			if string(got) != string(src) {
				t.Errorf("eval %s: %s copied as %q", ev.ID, f, got)
			}
		}
		var n int
		filepath.WalkDir(ws, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				n++
			}
			return err
		})
		if n != len(ev.Files) {
			t.Errorf("eval %s: %d files in the workspace, want %d", ev.ID, n, len(ev.Files))
		}
	}
}

// wantUsage checks err is the usage error (exit 2) with code, saying
// what.
func wantUsage(t *testing.T, err error, code, what string) {
	t.Helper()
	var oe *outcome.Error
	if !errors.As(err, &oe) {
		t.Fatalf("got %v (%T), want a usage error %s", err, err, code)
	}
	if oe.Exit != outcome.ExitUsage || oe.Code != code {
		t.Fatalf("exit %d code %s, want %d %s: %v", oe.Exit, oe.Code, outcome.ExitUsage, code, err)
	}
	if !strings.Contains(err.Error(), what) {
		t.Fatalf("%v\ndoes not say %q", err, what)
	}
}

// skillWith makes a skill directory holding SKILL.md and the files given
// (relative paths), and returns it.
func skillWith(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "demo")
	all := map[string]string{"SKILL.md": "---\nname: demo\ndescription: A demonstration skill.\n---\nSay hello.\n"}
	for k, v := range files {
		all[k] = v
	}
	testenv.WriteTree(t, dir, all)
	return dir
}

func loadYAML(t *testing.T, yaml string, files map[string]string) (*Suite, error) {
	t.Helper()
	all := map[string]string{"evals/" + EvalsYAML: yaml}
	for k, v := range files {
		all[k] = v
	}
	return Load(LoadOptions{Path: skillWith(t, all)})
}

const okEval = "evals:\n  - id: 1\n    prompt: hi\n    checks:\n      - answer-contains: hello\n"

func TestLoadYAML(t *testing.T) {
	s, err := loadYAML(t, okEval, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Evals) != 1 || s.Evals[0].ID != "1" || s.Evals[0].Checks[0].Kind() != "answer-contains" {
		t.Fatalf("%+v", s.Evals)
	}
}

// TestLoadHostile: an eval file is the author's, and a file out of shape
// is a usage error naming what is wrong, never a hang, a crash or a read
// outside the skill.
func TestLoadHostile(t *testing.T) {
	bomb := "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
	for i := 'b'; i <= 'k'; i++ {
		bomb += string(i) + ": &" + string(i) + " [" + strings.Repeat("*"+string(i-1)+", ", 9) + "*" + string(i-1) + "]\n"
	}
	bomb += okEval
	outside := filepath.Join(t.TempDir(), "outside.json")
	testenv.Must(t, os.WriteFile(outside, []byte(`{"type": "string"}`), 0o644))
	schemaCheck := func(name string) string {
		return "evals:\n  - id: 1\n    prompt: hi\n    checks:\n      - answer-schema: " + name + "\n"
	}
	for _, tc := range []struct {
		name  string
		yaml  string
		files map[string]string
		link  [2]string // a symbolic link to make in the skill: name, target
		want  string
	}{
		{name: "alias bomb", yaml: bomb, want: "alias"},
		{name: "two MiB", yaml: okEval + "# " + strings.Repeat("x", 2<<20) + "\n", want: "larger than"},
		{name: "deep nesting", yaml: "evals: " + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + "\n", want: "nest"},
		{name: "deep nesting in a mapping", yaml: okEval + "x: " + strings.Repeat("{a: ", 500) + "1" + strings.Repeat("}", 500) + "\n", want: "nest"},
		{name: "duplicate ids", yaml: "evals:\n  - {id: 1, prompt: a, expectations: [x]}\n  - {id: 1, prompt: b, expectations: [y]}\n", want: "another eval has this id"},
		{name: "duplicate ids, number and string", yaml: "evals:\n  - {id: 7, prompt: a, expectations: [x]}\n  - {id: \"7\", prompt: b, expectations: [y]}\n", want: "another eval has this id"},
		{name: "unknown top-level key", yaml: okEval + "extra: 1\n", want: "extra"},
		{name: "unknown eval key", yaml: "evals:\n  - {id: 1, prompt: a, expectations: [x], timeout: 3}\n", want: "timeout"},
		{name: "unknown check key", yaml: "evals:\n  - {id: 1, prompt: a, checks: [{answer-contains: x, weight: 2}]}\n", want: "weight"},
		{name: "two kinds", yaml: "evals:\n  - {id: 1, prompt: a, checks: [{answer-contains: x, tool-called: read_file}]}\n", want: "does not match the schema"},
		{name: "two file tests", yaml: "evals:\n  - {id: 1, prompt: a, checks: [{file: out.txt, exists: true, contains: x}]}\n", want: "does not match the schema"},
		{name: "file beside another kind", yaml: "evals:\n  - {id: 1, prompt: a, checks: [{answer-contains: x, file: out.txt}]}\n", want: "checks[0]"},
		{name: "file test beside another kind", yaml: "evals:\n  - {id: 1, prompt: a, checks: [{tool-called: read_file, contains: x}]}\n", want: "checks[0]"},
		{name: "file test without a file", yaml: "evals:\n  - {id: 1, prompt: a, checks: [{max-turns: 3, exists: false}]}\n", want: "checks[0]"},
		{name: "remote $ref", yaml: schemaCheck("s.json"), files: map[string]string{"evals/s.json": `{"$ref": "https://example.com/s.json"}`}, want: "self-contained"},
		{name: "file $ref", yaml: schemaCheck("s.json"), files: map[string]string{"evals/s.json": `{"$ref": "file://` + outside + `"}`}, want: "self-contained"},
		{name: "relative $ref", yaml: schemaCheck("s.json"), files: map[string]string{"evals/s.json": `{"$ref": "other.json"}`, "evals/other.json": `{}`}, want: "self-contained"},
		{name: "remote $schema", yaml: schemaCheck("s.json"), files: map[string]string{"evals/s.json": `{"$schema": "https://example.com/meta", "type": "string"}`}, want: "self-contained"},
		{name: "schema a link out", yaml: schemaCheck("s.json"), link: [2]string{"evals/s.json", outside}, want: "schema s.json"},
		{name: "schema leaves", yaml: schemaCheck("../../x.json"), want: "leaves"},
		{name: "input with ..", yaml: "evals:\n  - {id: 1, prompt: a, expectations: [x], files: [../secret]}\n", want: "leaves the skill's directory"},
		{name: "input with .. inside", yaml: "evals:\n  - {id: 1, prompt: a, expectations: [x], files: [evals/../../secret]}\n", want: "leaves the skill's directory"},
		{name: "absolute input", yaml: "evals:\n  - {id: 1, prompt: a, expectations: [x], files: [/etc/passwd]}\n", want: "is absolute"},
		{name: "input with NUL", yaml: "evals:\n  - {id: 1, prompt: a, expectations: [x], files: [\"a\\0b\"]}\n", want: "control character"},
		{name: "file check with ..", yaml: "evals:\n  - {id: 1, prompt: a, checks: [{file: ../x, exists: true}]}\n", want: "leaves"},
		{name: "file check absolute", yaml: "evals:\n  - {id: 1, prompt: a, checks: [{file: /etc/passwd, contains: root}]}\n", want: "is absolute"},
		{name: "nothing measured", yaml: "evals:\n  - {id: 1, prompt: a}\n", want: "nothing would be measured"},
		{name: "bad regexp", yaml: "evals:\n  - {id: 1, prompt: a, checks: [{answer-matches: \"(\"}]}\n", want: "regular expression"},
		{name: "NaN cost", yaml: "evals:\n  - {id: 1, prompt: a, checks: [{max-cost: .nan}]}\n", want: "max-cost"},
		{name: "infinite id", yaml: "evals:\n  - {id: .inf, prompt: a, expectations: [x]}\n", want: "evals.yaml:2: evals.0.id"},
		{name: "not a mapping", yaml: "- 1\n- 2\n", want: "does not match the schema"},
		{name: "empty", yaml: "", want: "want object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{"evals/" + EvalsYAML: tc.yaml}
			for k, v := range tc.files {
				files[k] = v
			}
			dir := skillWith(t, files)
			if tc.link[0] != "" {
				testenv.Must(t, os.Symlink(tc.link[1], filepath.Join(dir, tc.link[0])))
			}
			s, err := Load(LoadOptions{Path: dir})
			if err == nil {
				t.Fatalf("loaded: %+v", s.Evals)
			}
			wantUsage(t, err, "eval_file_invalid", tc.want)
		})
	}
}

// TestLoadCaseIDs: ids that differ only in case are two evals, and their
// cells stay apart.
func TestLoadCaseIDs(t *testing.T) {
	s, err := loadYAML(t, "evals:\n  - {id: Alpha, prompt: a, expectations: [x]}\n  - {id: alpha, prompt: b, expectations: [y]}\n  - {id: ALPHA, prompt: c, expectations: [z]}\n", nil)
	testenv.Must(t, err)
	cells := plan(s, []string{record.ConfigWithSkill, record.ConfigWithoutSkill}, []string{"m"}, 2)
	seen := map[string]string{}
	for _, c := range cells {
		if other, ok := seen[strings.ToLower(c.ID)]; ok {
			t.Fatalf("cells %s and %s share an id (as a case-insensitive file system sees it)", other, c.ID)
		}
		seen[strings.ToLower(c.ID)] = c.ID
	}
	if len(seen) != 12 {
		t.Fatalf("%d cells", len(seen))
	}
}

// TestLoadCellIDCollision: an id written as another's cell id would be
// (the lower-cased form with its digest) is refused, or the two evals
// would share one workspace and one run.
func TestLoadCellIDCollision(t *testing.T) {
	twin := cellPart("Alpha")
	_, err := loadYAML(t, "evals:\n  - {id: Alpha, prompt: a, expectations: [x]}\n  - {id: "+twin+", prompt: b, expectations: [y]}\n", nil)
	wantUsage(t, err, "eval_file_invalid", "same cell id")
}

// TestLoadFIFO: an eval file, triggers file or check schema that is a
// FIFO is refused at once, not waited on.
func TestLoadFIFO(t *testing.T) {
	for _, tc := range []struct{ fifo, yaml string }{
		{fifo: "evals/" + EvalsYAML},
		{fifo: "evals/" + TriggersJSON, yaml: okEval},
		{fifo: "evals/s.json", yaml: "evals:\n  - id: 1\n    prompt: hi\n    checks:\n      - answer-schema: s.json\n"},
	} {
		t.Run(tc.fifo, func(t *testing.T) {
			files := map[string]string{}
			if tc.yaml != "" {
				files["evals/"+EvalsYAML] = tc.yaml
			}
			dir := skillWith(t, files)
			fifo := filepath.Join(dir, tc.fifo)
			testenv.Must(t, os.MkdirAll(filepath.Dir(fifo), 0o755))
			testenv.Must(t, syscall.Mkfifo(fifo, 0o644))
			err := within(t, 5*time.Second, fifo, func() error {
				_, err := Load(LoadOptions{Path: dir})
				return err
			})
			wantUsage(t, err, "eval_file_invalid", "not a regular file")
		})
	}
}
