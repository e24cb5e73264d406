package cfc

import (
	"slices"
	"strings"
)

// Role is the authority of an item in the model's context.
type Role string

const (
	RoleDirectCommand Role = "direct-command" // the operator's instruction
	RoleQuote         Role = "quote"          // operator-supplied text to work on, not to obey
	RoleContext       Role = "context"        // everything harness injects or observes
)

// rank orders roles by authority; a join keeps the lowest.
func (r Role) rank() int {
	switch r {
	case RoleDirectCommand:
		return 2
	case RoleQuote:
		return 1
	}
	return 0
}

// ParseRole validates a --prompt-role value.
func ParseRole(s string) (Role, bool) {
	switch r := Role(s); r {
	case RoleDirectCommand, RoleQuote, RoleContext:
		return r, true
	}
	return "", false
}

// Integrity says whether an item came from the operator or was observed.
type Integrity string

const (
	Trusted   Integrity = "trusted"
	Untrusted Integrity = "untrusted"
)

// Label is what harness knows about an item in the context: its role,
// its integrity and the sources it carries (confidentiality), such as
// "operator", "skill:pattern-dev", "tool:read_file:/workspace/a.txt".
type Label struct {
	Role      Role      `json:"role"`
	Integrity Integrity `json:"integrity"`
	Sources   []string  `json:"sources"`
}

// Operator labels the operator's prompt with its configured role.
func Operator(role Role) Label {
	return Label{Role: role, Integrity: Trusted, Sources: []string{"operator"}}
}

// Observed labels anything harness injected or observed: always context,
// always untrusted, whatever it says.
func Observed(source string) Label {
	return Label{Role: RoleContext, Integrity: Untrusted, Sources: []string{source}}
}

// Join is the label of something derived from both a and b: the lower
// role, the lower integrity, the union of sources. It is commutative,
// associative and idempotent, so the order context items are joined in
// does not matter.
func Join(a, b Label) Label {
	out := Label{Role: a.Role, Integrity: a.Integrity}
	switch {
	case a.Role == "":
		out.Role = b.Role
	case b.Role != "" && b.Role.rank() < a.Role.rank():
		out.Role = b.Role
	}
	switch {
	case a.Integrity == Untrusted || b.Integrity == Untrusted:
		out.Integrity = Untrusted
	case a.Integrity == Trusted || b.Integrity == Trusted:
		out.Integrity = Trusted
	}
	out.Sources = append(append([]string{}, a.Sources...), b.Sources...)
	slices.Sort(out.Sources)
	out.Sources = slices.Compact(out.Sources)
	return out
}

// JoinAll joins labels; the zero Label is the identity.
func JoinAll(ls ...Label) Label {
	var out Label
	for _, l := range ls {
		out = Join(out, l)
	}
	if out.Sources == nil {
		out.Sources = []string{}
	}
	return out
}

func (l Label) String() string {
	return string(l.Role) + "/" + string(l.Integrity) + "[" + strings.Join(l.Sources, ",") + "]"
}
