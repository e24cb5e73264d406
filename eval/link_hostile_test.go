package eval

import (
	"os"
	"path/filepath"
	"testing"
)

// A skill's evals/ directory is its author's. A link there that leads out
// of the skill (evals.json, evals.yaml or triggers.json pointing at a
// file elsewhere, or at a device: opening /dev/watchdog as root arms it)
// is followed by Load, which opens and parses what it leads to before the
// copy of the skill refuses the link. Load must refuse such a link
// without opening its target, as the copy does.
func TestLoadFollowsNoLinkOutOfTheSkill(t *testing.T) {
	outside := t.TempDir()
	evals := filepath.Join(outside, "evals.json")
	if err := os.WriteFile(evals, []byte(`{"skill_name":"x","evals":[{"id":1,"prompt":"SECRET-PROMPT","expected_output":"e","expectations":["a"]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	triggers := filepath.Join(outside, "triggers.json")
	if err := os.WriteFile(triggers, []byte(`[{"query":"SECRET-QUERY","should_trigger":true}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, link, target string }{
		{"evals.json", EvalsJSON, evals},
		{"triggers.json", TriggersJSON, triggers},
	} {
		t.Run(tc.name, func(t *testing.T) {
			skill := filepath.Join(t.TempDir(), "x")
			if err := os.MkdirAll(filepath.Join(skill, "evals"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(skill, "SKILL.md"), []byte("---\nname: x\ndescription: X. Use for x.\n---\nx\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(tc.target, filepath.Join(skill, "evals", tc.link)); err != nil {
				t.Fatal(err)
			}
			s, err := Load(LoadOptions{Path: skill})
			if err == nil {
				t.Fatalf("evals/%s, a link to %s outside the skill, was read (%d evals, %d trigger queries)", tc.link, tc.target, len(s.Evals), len(s.Triggers))
			}
		})
	}
}
