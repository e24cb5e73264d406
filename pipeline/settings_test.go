package pipeline

import (
	"encoding/json"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"text/template"

	"github.com/harness-dev/harness/record"
)

// The Go type, the pipeline schema and the batch schema describe the same
// settings: a key one of them lacks would be refused or dropped silently.
func TestSettingsSchemasMatchTheType(t *testing.T) {
	want := record.SettingKeys()
	for name, schema := range map[string][]byte{"pipeline": Schema, "batch": BatchSchema} {
		var doc struct {
			Defs struct {
				Defaults struct {
					Properties map[string]any `json:"properties"`
				} `json:"defaults"`
			} `json:"$defs"`
		}
		if err := json.Unmarshal(schema, &doc); err != nil {
			t.Fatal(err)
		}
		got := slices.Sorted(maps.Keys(doc.Defs.Defaults.Properties))
		if !slices.Equal(got, want) {
			t.Errorf("%s schema defaults = %v, record.Settings = %v", name, got, want)
		}
	}
}

func TestOverLaysEachSetSetting(t *testing.T) {
	zero, two, yes, no := 0, 2, true, false
	tests := []struct {
		name      string
		base, top record.Settings
		want      record.Settings
	}{
		{"empty top keeps base", record.Settings{Model: "a", MaxRetries: &two}, record.Settings{}, record.Settings{Model: "a", MaxRetries: &two}},
		{"zero is a value", record.Settings{MaxRetries: &two}, record.Settings{MaxRetries: &zero}, record.Settings{MaxRetries: &zero}},
		{"false is a value", record.Settings{Stream: &yes}, record.Settings{Stream: &no}, record.Settings{Stream: &no}},
		{"lists are replaced, not merged", record.Settings{Stop: []string{"a", "b"}}, record.Settings{Stop: []string{"c"}}, record.Settings{Stop: []string{"c"}}},
		{"untouched keys stay", record.Settings{Model: "a", Sandbox: "bwrap"}, record.Settings{Model: "b"}, record.Settings{Model: "b", Sandbox: "bwrap"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := over(tt.base, tt.top); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("over = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestLayerCheckNamesTheFlag(t *testing.T) {
	temp := 3.0
	tests := []struct {
		name string
		s    record.Settings
		want string
	}{
		{"enum", record.Settings{Sandbox: "box"}, "--sandbox: value must be one of"},
		{"range", record.Settings{Temperature: &temp}, "--temperature: maximum: got 3, want 2"},
		{"duration", record.Settings{RetryMaxWait: "soon"}, "--retry-max-wait:"},
		{"size", record.Settings{ScriptMemoryLimit: "1KiB"}, "--script-memory-limit: 1KiB is below"},
		{"fine", record.Settings{Sandbox: "none", Temperature: new(float64)}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Layer{Settings: tt.s}.check()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("check: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("check = %v, want %q", err, tt.want)
			}
		})
	}
}

// Any template text a file holds is checked without a panic, and the
// advice each problem gives works: once the phase it reads is in the
// unit's needs and the var it reads is defined, that problem is gone.
func FuzzTemplateProblems(f *testing.F) {
	for _, s := range []string{"{{ .phases.a.answer }}", "{{ range .vars.x }}{{ $.phases.b }}{{ end }}", "{{ with $x := .task.id }}{{ $x }}{{ end }}", "{{ template \"t\" .vars }}", "{{ .vars }}", "{{ .vars.y }}{{ .phases.c.status }}"} {
		f.Add(s)
	}
	notNeeded := regexp.MustCompile(`reads \.phases\.([^,\s]+), which is not in its needs`)
	undefined := regexp.MustCompile(`reads \.vars\.([^,\s]+), which is not defined`)
	f.Fuzz(func(t *testing.T, text string) {
		tmpl, err := template.New("p").Parse(text)
		if err != nil {
			return
		}
		file := &File{unit: "phase", Vars: map[string]string{"x": "1"}}
		unit := &Phase{Name: "p", Needs: []string{"a"}}
		problems := file.templateProblems(tmpl, unit, "prompt")
		for _, p := range problems {
			if !strings.HasPrefix(p, `phase "p": prompt reads .`) {
				t.Fatalf("%q: a problem that does not say which unit and what it reads: %q", text, p)
			}
			if m := notNeeded.FindStringSubmatch(p); m != nil {
				unit.Needs = append(unit.Needs, m[1])
			}
			if m := undefined.FindStringSubmatch(p); m != nil {
				file.Vars[m[1]] = "v"
			}
		}
		for _, p := range file.templateProblems(tmpl, unit, "prompt") {
			if notNeeded.MatchString(p) || undefined.MatchString(p) {
				t.Fatalf("%q: still %q after following the advice of %q", text, p, problems)
			}
		}
	})
}
