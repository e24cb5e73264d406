package eval

import (
	"fmt"
	"testing"

	"github.com/harness-dev/harness/record"
)

// MaxCells refuses by the count plan would make: the two must agree, or
// a bound would let more cells run than it says.
func TestCellCountIsPlan(t *testing.T) {
	s := &Suite{Evals: []Eval{{ID: "1"}, {ID: "2"}, {ID: "3"}}, Triggers: []Trigger{{Query: "a"}, {Query: "b", ShouldTrigger: true}}}
	for _, o := range []Options{
		{Epochs: 1},
		{Epochs: 3, Baseline: "old"},
		{Epochs: 2, NoWithout: true, Baseline: "old"},
	} {
		for _, models := range [][]string{{"m"}, {"m", "n"}} {
			t.Run(fmt.Sprintf("%+v on %d models", o, len(models)), func(t *testing.T) {
				configs := []string{record.ConfigWithSkill}
				if !o.NoWithout {
					configs = append(configs, record.ConfigWithoutSkill)
				}
				if o.Baseline != "" {
					configs = append(configs, record.ConfigOldSkill)
				}
				if got, want := cellCount(s, o, len(models)), len(plan(s, configs, models, o.Epochs)); got != want {
					t.Fatalf("cellCount = %d, plan makes %d", got, want)
				}
			})
		}
	}
}
