package skills

import (
	"strings"
	"testing"
	"time"
)

func TestLimitsOf(t *testing.T) {
	harness := func(limits any) map[string]any {
		return map[string]any{"metadata": map[string]any{"harness": map[string]any{"limits": limits}}}
	}
	tests := []struct {
		name string
		fm   map[string]any
		want *ExecLimits
		err  string
	}{
		{"none", map[string]any{}, nil, ""},
		{"all three", harness(map[string]any{"timeout": "30s", "max-tokens": uint64(2000), "max-turns": 5}), &ExecLimits{Timeout: 30 * time.Second, MaxTokens: 2000, MaxTurns: 5}, ""},
		{"a whole float from JSON", harness(map[string]any{"max-turns": float64(3)}), &ExecLimits{MaxTurns: 3}, ""},
		{"not a mapping", harness("fast"), nil, "must be a mapping"},
		{"a timeout that does not parse", harness(map[string]any{"timeout": "soon"}), nil, "timeout soon"},
		{"a number for a timeout", harness(map[string]any{"timeout": 30}), nil, "give a duration"},
		{"zero turns", harness(map[string]any{"max-turns": 0}), nil, "above 0"},
		{"a fraction", harness(map[string]any{"max-tokens": 1.5}), nil, "whole number"},
		{"an unknown limit", harness(map[string]any{"memory": "1GiB"}), nil, "not a limit harness knows"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := LimitsOf(tt.fm)
			switch {
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Fatalf("err = %v, want %q", err, tt.err)
			case tt.err == "" && err != nil:
				t.Fatal(err)
			case tt.err == "" && (got == nil) != (tt.want == nil) || got != nil && *got != *tt.want:
				t.Errorf("LimitsOf = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestNarrower(t *testing.T) {
	for _, c := range []struct{ operator, skill, want int }{{50, 0, 50}, {0, 5, 5}, {50, 5, 5}, {4, 20, 4}} {
		if got := Narrower(c.operator, c.skill); got != c.want {
			t.Errorf("Narrower(%d, %d) = %d, want %d", c.operator, c.skill, got, c.want)
		}
	}
}
