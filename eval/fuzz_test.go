package eval

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/testenv"
	"github.com/harness-dev/harness/outcome"
)

// FuzzLoad: whatever an eval file holds, Load gives a suite or a usage
// error (exit 2) naming it, and never panics.
func FuzzLoad(f *testing.F) {
	for _, seed := range []string{
		okEval,
		"evals:\n  - {id: 1, prompt: a, expectations: [x], files: [evals/files/a.txt, ../x, /etc/passwd]}\n",
		"evals:\n  - {id: Alpha, prompt: a, checks: [{file: out.txt, exists: true}, {answer-schema: s.json}, {command: [\"true\"]}]}\n  - {id: alpha, prompt: b, checks: [{max-cost: .nan}, {max-tokens: 18446744073709551616}]}\n",
		"evals:\n  - {id: 1e400, prompt: a, expectations: [x]}\n  - {id: -1, prompt: b, expectations: [x]}\n",
		"a: &a [x, x]\nb: &b [*a, *a]\nevals: [*b]\n",
		"{\"evals\": [{\"id\": 0, \"prompt\": \"p\", \"expectations\": [\"e\"], \"checks\": [{\"answer-matches\": \"(\"}]}]}",
		"evals: " + strings.Repeat("[", 100) + "\n",
		"? [a, b]\n: c\nevals: []\n",
		"evals:\n  - !!binary aGk=\n",
		"--- \nevals: []\n--- \nevals: []\n",
	} {
		f.Add([]byte(seed))
	}
	if raw, err := os.ReadFile(filepath.Join(published, "evals", EvalsJSON)); err == nil {
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		testenv.WriteTree(t, dir, map[string]string{
			"SKILL.md":           "---\nname: demo\ndescription: A demonstration skill.\n---\n",
			"evals/s.json":       `{"type": "object"}`,
			"evals/files/a.txt":  "A",
			"evals/" + EvalsYAML: string(data),
		})
		s, err := Load(LoadOptions{Path: dir})
		if err == nil {
			if s == nil || s.File == "" {
				t.Fatalf("no error and no suite")
			}
			return
		}
		var oe *outcome.Error
		if !errors.As(err, &oe) || oe.Exit != outcome.ExitUsage || oe.Code == "" {
			t.Fatalf("%v (%T): want a usage error", err, err)
		}
	})
}
