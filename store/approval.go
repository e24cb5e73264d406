package store

import (
	"strings"

	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/skills"
)

// Approval is how far a new version may go live without a person: up to
// a risk tier, above it pending until harness skills approve.
type Approval struct {
	// UpTo is the highest tier made live without a person; Never makes
	// every new version wait.
	UpTo  skills.Risk
	Never bool
}

// ParseApproval reads a tier flag (--approve-created, --approve-installed):
// minimal, low, moderate or none. Higher tiers always wait for a person.
func ParseApproval(flag, s string) (Approval, error) {
	if s == "none" {
		return Approval{Never: true}, nil
	}
	r, err := skills.ParseRisk(s)
	if err != nil || r > skills.RiskModerate {
		code := strings.ReplaceAll(strings.TrimPrefix(flag, "--"), "-", "_") + "_invalid"
		return Approval{}, outcome.Usage(code, "%s %q: give minimal, low, moderate or none (high and critical always wait for a person)", flag, s)
	}
	return Approval{UpTo: r}, nil
}

func (a Approval) String() string {
	if a.Never {
		return "none"
	}
	return a.UpTo.String()
}

// Auto reports whether a version of risk r goes live without a person.
func (a Approval) Auto(r skills.Risk) bool { return !a.Never && r <= a.UpTo }
