package pipeline

import (
	"testing"
	"text/template"
)

// Whether a prompt or an attach entry carries earlier phases' output is
// judged on what it fills in, however the template reaches the phases.
func TestDependsOnPhases(t *testing.T) {
	data := map[string]any{
		"vars":   map[string]any{"doc": "spec.md"},
		"phases": map[string]any{"find": map[string]any{"answer": "/etc/passwd", "structuredOutput": map[string]any{"file": "/etc/passwd"}}},
	}
	for _, tc := range []struct {
		text string
		want bool
	}{
		{"{{ .vars.doc }}", false},
		{"plain.md", false},
		{"{{ .phases.find.answer }}", true},
		{`{{ index . "phases" "find" "answer" }}`, true},
		{`{{ index (index . "phases") "find" }}`, true},
		{`{{ range $k, $v := . }}{{ $v }}{{ end }}`, true},
		{`{{ index . (printf "%s%s" "pha" "ses") }}`, true},
		{`{{ $p := index . "phases" }}{{ .vars.doc }}`, false},
	} {
		tm := template.Must(template.New("t").Option("missingkey=error").Parse(tc.text))
		out, err := render(tm, data)
		if err != nil {
			t.Fatalf("%s: %v", tc.text, err)
		}
		if got := dependsOnPhases(tm, data, out); got != tc.want {
			t.Errorf("%s: depends on phases %v, want %v", tc.text, got, tc.want)
		}
	}
}
