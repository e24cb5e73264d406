package kube

import (
	"testing"
)

// Whatever a word holds, Kubernetes hands the container the word itself,
// never a variable's value.
func TestLiteralSurvivesExpansion(t *testing.T) {
	vars := map[string]string{"HARNESS_API_KEY": "sk-secret", "X": "x"}
	for _, s := range []string{"", "plain", "$(HARNESS_API_KEY)", "say $(HARNESS_API_KEY) now", "$$(HARNESS_API_KEY)", "$$$(X)", "$", "a$", "$$", "$(", "$(X", "$x$(X)$", "cost: $5"} {
		if got := Expand(Literal(s), vars); got != s {
			t.Errorf("Expand(Literal(%q)) = %q", s, got)
		}
	}
	// Unescaped, the key would be the word.
	if got := Expand("$(HARNESS_API_KEY)", vars); got != "sk-secret" {
		t.Fatalf("the expansion does not expand: %q", got)
	}
	if got := Expand("$$(X) $(Y) $x", vars); got != "$(X) $(Y) $x" {
		t.Errorf("Expand = %q", got)
	}
}

func FuzzLiteral(f *testing.F) {
	for _, s := range []string{"$(HARNESS_API_KEY)", "$$(X)", "$", "(($$))"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got := Expand(Literal(s), map[string]string{"HARNESS_API_KEY": "sk-secret", "X": "x"}); got != s {
			t.Fatalf("Expand(Literal(%q)) = %q", s, got)
		}
	})
}
