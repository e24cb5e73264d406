package pipeline

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOrderAndCycles(t *testing.T) {
	ph := func(name string, needs ...string) Phase { return Phase{Name: name, Needs: needs} }
	tests := []struct {
		name   string
		phases []Phase
		order  string
		cycle  string
	}{
		{"file order when independent", []Phase{ph("b"), ph("a"), ph("c")}, "b,a,c", ""},
		{"needs first", []Phase{ph("review", "api", "ui"), ph("spec"), ph("api", "spec"), ph("ui", "spec")}, "spec,api,ui,review", ""},
		{"chain declared backwards", []Phase{ph("c", "b"), ph("b", "a"), ph("a")}, "a,b,c", ""},
		{"two-cycle", []Phase{ph("a", "b"), ph("b", "a")}, "", "a,b,a"},
		{"self", []Phase{ph("a", "a")}, "", "a,a"},
		{"cycle behind a root", []Phase{ph("r"), ph("x", "r", "z"), ph("y", "x"), ph("z", "y")}, "", "x,z,y,x"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := strings.Join(cycle(tc.phases), ",")
			if got != tc.cycle {
				t.Fatalf("cycle = %q, want %q", got, tc.cycle)
			}
			if tc.cycle == "" {
				if o := strings.Join(order(tc.phases), ","); o != tc.order {
					t.Errorf("order = %s, want %s", o, tc.order)
				}
			}
		})
	}
}

// A phase's prompt sees .vars and the phases it needs, nothing else: a
// reference to any other phase is a problem of the file, found when it is
// loaded; and should one get through, it fails to render instead of
// reading the phase.
func TestTemplateSeesOnlyNeeds(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "p.yaml")
	prompt := "\"{{ .vars.x }} {{ .phases.a.answer }} {{ .phases.b.answer }}\""
	os.WriteFile(file, []byte("vars: {x: one}\nphases:\n  - name: a\n    prompt: A\n  - name: b\n    prompt: B\n  - name: c\n    needs: [a]\n    prompt: "+prompt+"\n"), 0o644)
	if _, err := Load(file, nil); err == nil || !strings.Contains(err.Error(), `phase "c": prompt reads .phases.b, which is not in its needs (needs: a)`) {
		t.Fatalf("Load = %v, want the reference to b refused", err)
	}
	os.WriteFile(file, []byte("vars: {x: one}\nphases:\n  - name: a\n    prompt: A\n  - name: b\n    prompt: B\n  - name: c\n    needs: [a, b]\n    prompt: "+prompt+"\n"), 0o644)
	f, err := Load(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := newPipe(f, dir, pipelineLayout, Common{})
	p.done["a"] = &phaseDone{}
	p.done["b"] = &phaseDone{}
	c := f.phase("c")
	c.Needs = []string{"a"}
	if _, err := p.options(c, p.templateData(c)); err == nil || !strings.Contains(err.Error(), `map has no entry for key "b"`) {
		t.Errorf("err = %v, want a refusal naming phase b", err)
	}
	if !c.readsPhases {
		t.Error("a prompt reading .phases was not marked")
	}
}

func TestTemplateProblems(t *testing.T) {
	tests := []struct {
		name, prompt string
		want         string // "" = none
	}{
		{"a phase it needs", "{{ .phases.a.answer }}", ""},
		{"a field a phase lacks", "{{ .phases.a.answr }}", `reads .phases.a.answr: a phase has answer, answerFile, runDir, status, structuredOutput`},
		{"an undefined var", "{{ .vars.featur }}", `reads .vars.featur, which is not defined (vars: feature): define it under vars: or pass --var featur=VALUE`},
		{"a task field", "{{ .task.name }}", `reads .task.name: a template has only .task.id`},
		{"an unknown top", "{{ .phase.a }}", `reads .phase: a template reads .vars, .phases and .task`},
		{"$ inside range", "{{ range .vars.feature }}{{ $.vars.nope }}{{ end }}", `reads .vars.nope`},
		{"dot inside with is not the top", "{{ with .phases.a }}{{ .answer }}{{ end }}", ""},
		{"if keeps the top", "{{ if .vars.feature }}{{ .phases.z.status }}{{ end }}", `reads .phases.z, which is not in its needs (needs: a)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "p.yaml")
			os.WriteFile(file, []byte("vars: {feature: csv}\nphases:\n  - name: a\n    prompt: A\n  - name: b\n    needs: [a]\n    prompt: '"+tt.prompt+"'\n"), 0o644)
			_, err := Load(file, nil)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Load: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Load = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestVarsOverrideTheFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "p.yaml")
	os.WriteFile(file, []byte("vars: {x: file, n: 3}\nphases:\n  - name: a\n    prompt: \"{{ .vars.x }} {{ .vars.n }}\"\n"), 0o644)
	f, err := Load(file, map[string]string{"x": "flag"})
	if err != nil {
		t.Fatal(err)
	}
	p := newPipe(f, dir, pipelineLayout, Common{})
	o, err := p.options(f.phase("a"), p.templateData(f.phase("a")))
	if err != nil {
		t.Fatal(err)
	}
	if o.Prompt != "flag 3" {
		t.Errorf("prompt = %q", o.Prompt)
	}
}

// Load never panics and either returns a file or a usage error, whatever
// the bytes.
func FuzzLoad(f *testing.F) {
	f.Add([]byte("phases:\n  - name: a\n    prompt: x\n"))
	f.Add([]byte("phases:\n  - name: a\n    needs: [a]\n    prompt: \"{{ .phases.a.answer }}\"\n"))
	f.Add([]byte("defaults: {max-turns: -1}\nphases: []\n"))
	f.Add([]byte("phases: [ {name: a"))
	f.Add([]byte("- 1\n- 2\n"))
	f.Add([]byte("phases:\n  - &a {name: a, prompt: x}\n  - *a\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		file := filepath.Join(dir, "p.yaml")
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
		pf, err := Load(file, nil)
		if err == nil && len(pf.Phases) == 0 {
			t.Fatal("a file without phases loaded")
		}
	})
}

// A task written inline in a batch file keeps every field it gives: its
// own prompt and model override the shared task's (a Task embeds Phase,
// which a YAML decoder that ignores embedding would leave empty).
func TestInlineTasksKeepTheirFields(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "b.yaml")
	os.WriteFile(file, []byte("defaults: {model: m}\ntask: {prompt: shared}\ntasks:\n  - id: own\n    prompt: mine\n    model: other\n    max-turns: 2\n  - id: plain\n"), 0o644)
	f, _, err := LoadBatch(file, nil, nil, Shard{})
	if err != nil {
		t.Fatal(err)
	}
	own, plain := f.phase("own"), f.phase("plain")
	if own == nil || plain == nil {
		t.Fatalf("tasks = %+v", f.Phases)
	}
	if own.Prompt != "mine" || own.Model != "other" || own.MaxTurns == nil || *own.MaxTurns != 2 {
		t.Errorf("own = prompt %q, model %q, max-turns %v", own.Prompt, own.Model, own.MaxTurns)
	}
	if plain.Prompt != "shared" {
		t.Errorf("plain prompt = %q, want the shared one", plain.Prompt)
	}
}
