package eval

import (
	"testing"

	"github.com/harness-dev/harness/record"
)

// Two evals on two models share a cell id: cellPart keeps '_', which also
// separates the parts of a cell id.
func TestCellIDCollisionAcrossModels(t *testing.T) {
	s, err := loadYAML(t, "evals:\n  - {id: 1_with_skill_m, prompt: a, expectations: [x]}\n  - {id: \"1\", prompt: b, expectations: [y]}\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]record.EvalCell{}
	for _, c := range plan(s, []string{record.ConfigWithSkill, record.ConfigWithoutSkill}, []string{"m", "m_with_skill_m"}, 1) {
		if o, ok := seen[c.ID]; ok {
			t.Errorf("cell id %s for eval %s on %s and eval %s on %s", c.ID, o.EvalID, o.Model, c.EvalID, c.Model)
		}
		seen[c.ID] = c
	}
}
