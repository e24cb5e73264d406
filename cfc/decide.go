package cfc

import (
	"fmt"
	"slices"
	"strings"
)

// Mode is how the policy is applied.
type Mode string

const (
	ModeDisabled        Mode = "disabled"
	ModeObserve         Mode = "observe"
	ModeEnforceExplicit Mode = "enforce-explicit"
	ModeEnforceStrict   Mode = "enforce-strict"
)

// ParseMode validates a --cfc-mode value.
func ParseMode(s string) (Mode, bool) {
	switch m := Mode(s); m {
	case ModeDisabled, ModeObserve, ModeEnforceExplicit, ModeEnforceStrict:
		return m, true
	}
	return "", false
}

// Effect is what a tool can do.
type Effect string

const (
	EffectRead       Effect = "read"
	EffectWrite      Effect = "write"
	EffectSideEffect Effect = "side-effect"
)

// Policy is what the operator configured. Nothing a skill says changes it.
type Policy struct {
	Mode         Mode
	PromptRole   Role
	AllowedTools []string // write and side-effect tools the operator allowed by name
	// Narrowing, when not nil, is the union of the allowed-tools of the
	// active skills (--honor-allowed-tools): calls outside it are denied.
	Narrowing []string
}

// Call is one tool call to decide.
type Call struct {
	Tool   string
	Effect Effect
	// Args are the string values in the call's arguments (paths, URLs,
	// command arguments), for the provenance check.
	Args []string
	// Context is the join of every label in the model's context.
	Context Label
	// Operator is the operator's prompt; Untrusted remembers the texts of
	// untrusted context items (skills, reads, tool outputs), decoded.
	Operator  string
	Untrusted *Provenance
	// OperatorValues are values the operator gave one by one (an allowed
	// skill script and its parts, an attached file's name): an argument
	// equal to one is the operator's, whatever untrusted text holds it too.
	OperatorValues []string
}

// Decision outcomes.
const (
	Allow = "allow"
	Deny  = "deny"
	Warn  = "warn" // observe mode: enforce would deny
)

// Decision is the verdict on one call, with the codes that decided it.
type Decision struct {
	Tool     string   `json:"tool"`
	Effect   Effect   `json:"effect"`
	Decision string   `json:"decision"`
	Reasons  []string `json:"reasons"`
	Label    Label    `json:"label"`
	Detail   string   `json:"detail,omitempty"`
	// WouldDenyIn names the enforce modes that would have denied a call
	// that observe only warned about (or that disabled allowed).
	WouldDenyIn []Mode `json:"wouldDenyIn,omitempty"`
	// ArgumentFromContext is an argument of a write or side-effect call
	// that came from untrusted context rather than the operator's prompt,
	// recorded whatever the mode decided, so a reviewer sees it even where
	// the call was allowed.
	ArgumentFromContext string `json:"argumentFromContext,omitempty"`
}

// Decide applies the policy to a call. observe decides as both enforce
// modes would and warns wherever either would deny, naming which.
func Decide(p Policy, c Call) Decision {
	d := Decision{Tool: c.Tool, Effect: c.Effect, Label: c.Context, Decision: Allow, Reasons: []string{}}
	if c.Effect != EffectRead {
		d.ArgumentFromContext, _ = FromContext(OperatorsOwn(c.Args, c.OperatorValues), c.Operator, c.Untrusted)
	}
	switch p.Mode {
	case ModeDisabled:
		d.Reasons = append(d.Reasons, "cfc_disabled")
		return d
	case ModeObserve:
		for _, m := range []Mode{ModeEnforceExplicit, ModeEnforceStrict} {
			if reasons, detail := enforce(m, p, c, d.ArgumentFromContext); len(reasons) > 0 {
				d.WouldDenyIn = append(d.WouldDenyIn, m)
				for _, r := range reasons {
					if !slices.Contains(d.Reasons, r) {
						d.Reasons = append(d.Reasons, r)
					}
				}
				if d.Detail == "" {
					d.Detail = fmt.Sprintf("%s would deny: %s", m, detail)
				}
			}
		}
		if len(d.WouldDenyIn) > 0 {
			d.Decision = Warn
			return d
		}
	default:
		if reasons, detail := enforce(p.Mode, p, c, d.ArgumentFromContext); len(reasons) > 0 {
			d.Decision, d.Reasons, d.Detail = Deny, reasons, detail
			return d
		}
	}
	d.Reasons = append(d.Reasons, "cfc_"+strings.ReplaceAll(string(p.Mode), "-", "_")+"_allowed")
	return d
}

// enforce returns why mode denies the call (none: allowed), with the
// first reason's explanation.
func enforce(mode Mode, p Policy, c Call, fromContext string) (reasons []string, detail string) {
	deny := func(code, text string) {
		reasons = append(reasons, code)
		if detail == "" {
			detail = text
		}
	}
	if p.Narrowing != nil && !slices.Contains(p.Narrowing, c.Tool) {
		deny("narrowed_by_skill", fmt.Sprintf("the active skills' allowed-tools (%s) do not include %s", strings.Join(p.Narrowing, ", "), c.Tool))
	}
	switch c.Effect {
	case EffectRead:
		if mode == ModeEnforceStrict && p.PromptRole != RoleDirectCommand {
			deny("cfc_enforce_strict_requires_direct_command", "enforce-strict allows reads only for a direct-command prompt")
		}
	default:
		if p.PromptRole != RoleDirectCommand {
			deny(fmt.Sprintf("cfc_%s_requires_direct_command", strings.ReplaceAll(string(mode), "-", "_")),
				fmt.Sprintf("%s tools need the operator's direct command; the prompt's role is %s", c.Effect, p.PromptRole))
		}
		if !slices.Contains(p.AllowedTools, c.Tool) {
			deny("tool_not_allowed_by_operator", fmt.Sprintf("the operator did not allow %s (--allow-tool)", c.Tool))
		}
		if mode == ModeEnforceStrict && fromContext != "" {
			deny("argument_from_context", fmt.Sprintf("argument %q comes from untrusted context, not from the operator's prompt", fromContext))
		}
	}
	return reasons, detail
}

// FromContext reports the first argument value that appears in untrusted
// context but not in the operator's prompt: a value the model most likely
// copied from something it read rather than from what it was told. Short
// values are ignored; they match everywhere.
//
// Both sides are compared decoded and normalized (see Normalize), so an
// argument with "&", "<", a newline or a decomposed accent is found in
// the text it was copied from however that text was encoded.
func FromContext(args []string, operator string, untrusted *Provenance) (string, bool) {
	if untrusted == nil {
		return "", false
	}
	op := Normalize(operator)
	for _, a := range args {
		n := Normalize(a)
		if len(n) < MinArgument || strings.Contains(op, n) {
			continue
		}
		if untrusted.Contains(n) {
			return a, true
		}
	}
	return "", false
}

// OperatorsOwn drops from args every value equal to one the operator gave
// (compared normalized, as FromContext compares): those carry the
// operator's provenance. Equality, not containment: a value the operator
// gave vouches for itself, never for text around or inside it.
func OperatorsOwn(args, given []string) []string {
	if len(given) == 0 {
		return args
	}
	own := make(map[string]bool, len(given))
	for _, v := range given {
		own[Normalize(v)] = true
	}
	out := make([]string, 0, len(args))
	for _, a := range args {
		if !own[Normalize(a)] {
			out = append(out, a)
		}
	}
	return out
}

// WithholdUnmediated reports whether an execution's output must be
// withheld: in enforce modes, output that no harness sandbox mediated
// (--sandbox none) reaches the model only if the operator allowed it.
func WithholdUnmediated(m Mode, mediated, allowUnmediated bool) bool {
	return !mediated && !allowUnmediated && (m == ModeEnforceExplicit || m == ModeEnforceStrict)
}
