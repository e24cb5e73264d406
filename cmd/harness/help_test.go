package main

import (
	"bytes"
	"io"
	"regexp"
	"strings"
	"testing"
)

// TestHelpShowsOneDefault: no flag's help says its default twice, as the
// usage text's own "(default 5m)" and the flag library's "(default: 0s)".
func TestHelpShowsOneDefault(t *testing.T) {
	twice := regexp.MustCompile(`default[^\n]*\(default: `)
	for _, args := range [][]string{{"run"}, {"resume"}, {"batch", "k8s"}, {"batch", "run"}, {"pipeline", "run"}, {"report"}, {"show"}} {
		var out bytes.Buffer
		app := newApp(strings.NewReader(""), &out, io.Discard)
		app.Run(t.Context(), append(append([]string{"harness"}, args...), "--help"))
		if m := twice.FindString(out.String()); m != "" {
			t.Errorf("harness %s --help says a default twice: %s", strings.Join(args, " "), m)
		}
	}
}
