package skills

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
)

// ExecLimits are a skill's own execution limits (metadata.harness.limits):
// Timeout caps each call of its scripts and MCP tools; MaxTokens and
// MaxTurns bind a child run started with it. A skill can only narrow what
// the operator allows: wherever both set one, the smaller holds.
type ExecLimits struct {
	Timeout   time.Duration `json:"timeout,omitempty"`
	MaxTokens int64         `json:"maxTokens,omitempty"`
	MaxTurns  int           `json:"maxTurns,omitempty"`
}

// LimitsOf reads metadata.harness.limits: nil when there is none; an error
// for a value harness could not hold the skill to (a limit it cannot read
// is refused, not ignored).
func LimitsOf(fm map[string]any) (*ExecLimits, error) {
	meta, _ := fm["metadata"].(map[string]any)
	h, _ := meta["harness"].(map[string]any)
	raw, present := h["limits"]
	if !present {
		return nil, nil
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("metadata.harness.limits must be a mapping of timeout, max-tokens and max-turns")
	}
	l := &ExecLimits{}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		switch k {
		case "timeout":
			s, ok := v.(string)
			d, err := time.ParseDuration(s)
			if !ok || err != nil || d <= 0 {
				return nil, fmt.Errorf("metadata.harness.limits.timeout %v: give a duration such as 30s or 2m", v)
			}
			l.Timeout = d
		case "max-tokens", "max-turns":
			n, ok := positive(v)
			if !ok {
				return nil, fmt.Errorf("metadata.harness.limits.%s %v: give a whole number above 0", k, v)
			}
			if k == "max-tokens" {
				l.MaxTokens = n
			} else {
				l.MaxTurns = int(min(n, math.MaxInt32))
			}
		default:
			return nil, fmt.Errorf("metadata.harness.limits.%s is not a limit harness knows (timeout, max-tokens, max-turns)", k)
		}
	}
	return l, nil
}

// positive reads a whole number above 0 however YAML typed it.
func positive(v any) (int64, bool) {
	var n int64
	switch x := v.(type) {
	case int:
		n = int64(x)
	case int64:
		n = x
	case uint64:
		if x > math.MaxInt64 {
			return 0, false
		}
		n = int64(x)
	case float64:
		if x != math.Trunc(x) || x > math.MaxInt64 {
			return 0, false
		}
		n = int64(x)
	default:
		return 0, false
	}
	return n, n > 0
}

// String is the limits as `skills info` shows them.
func (l *ExecLimits) String() string {
	if l == nil {
		return "none"
	}
	var parts, child []string
	if l.Timeout > 0 {
		parts = append(parts, "timeout "+l.Timeout.String()+" per script or MCP call")
	}
	if l.MaxTurns > 0 {
		child = append(child, fmt.Sprintf("max-turns %d", l.MaxTurns))
	}
	if l.MaxTokens > 0 {
		child = append(child, fmt.Sprintf("max-tokens %d", l.MaxTokens))
	}
	if len(child) > 0 {
		parts = append(parts, strings.Join(child, ", ")+" for a child run started with it")
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

// Narrower is the smaller of two limits where both are set (0: unset).
func Narrower[T int | int64 | time.Duration](operator, skill T) T {
	switch {
	case skill <= 0:
		return operator
	case operator <= 0:
		return skill
	}
	return min(operator, skill)
}
