package loop

import (
	"context"
	"errors"
)

// ReasonAwaitingApproval: a tool call needs a person's decision; it was
// not started, and the run can be resumed once someone decided.
const ReasonAwaitingApproval Reason = "awaiting_approval"

// AwaitingError is what a tool returns when work it started waits for a
// person (a call inside a child run): the run stops awaiting approval with
// the call started and unfinished, and a resume runs the call again, which
// continues that work where it stopped.
type AwaitingError struct{ What string }

func (e *AwaitingError) Error() string { return "waiting for a person's decision: " + e.What }

// Approval is what an Approver says of a call about to start.
type Approval int

const (
	// Proceed runs the call (policy still decides it).
	Proceed Approval = iota
	// Wait leaves the call unstarted and ends the run awaiting a person.
	Wait
	// Refuse answers the call with the refusal a person gave, unstarted.
	Refuse
)

// Approver decides, before a call starts, whether a person must confirm
// it. It is asked after the call's arguments passed their schema, so a
// person only ever sees well-formed calls; refused carries the result the
// model sees for a refused call.
type Approver interface {
	Approve(turn int, call ToolCall, effect Effect) (decision Approval, refused *ToolResult)
}

// runCalls runs the calls of one turn in order. It stops at the first
// call that must wait for a person, listing that call and every later one
// of the turn that must wait too (Outcome.Pending); none of them starts.
func (e *engine) runCalls(parent, ctx context.Context, turn int, calls []ToolCall) (Outcome, bool) {
	over := e.overBound()
	for i, call := range calls {
		// An interrupt stops before the next call; a call already
		// running sees the cancelled context itself.
		if r, ok := e.stopped(parent, ctx); ok {
			return e.end(r, nil), true
		}
		refused, code := over[call.ID], codeTooManyCalls
		if refused == nil {
			code = codeRefusedByPerson
			if d, res := e.approval(turn, call); d == Wait {
				e.out.Pending = []ToolCall{call}
				for _, later := range calls[i+1:] {
					if d, _ := e.approval(turn, later); d == Wait && over[later.ID] == nil {
						e.out.Pending = append(e.out.Pending, later)
					}
				}
				return e.end(ReasonAwaitingApproval, nil), true
			} else if d == Refuse {
				refused = res
			}
		}
		if err := e.callTool(ctx, turn, call, refused, code); err != nil {
			var aw *AwaitingError
			if errors.As(err, &aw) {
				return e.end(ReasonAwaitingApproval, nil), true
			}
			if err == errPolicyEnd {
				return e.end(ReasonPolicyDenied, err), true
			}
			if r, ok := e.stopped(parent, ctx); ok && err == errStoppedInCall {
				return e.end(r, nil), true
			}
			return e.fail(err), true
		}
	}
	return Outcome{}, false
}

// approval asks the Approver about a well-formed call of a known tool;
// anything else proceeds to be refused by the usual checks.
func (e *engine) approval(turn int, call ToolCall) (Approval, *ToolResult) {
	t, known := e.tools[call.Name]
	if e.cfg.Approver == nil || !known || e.checkArgs(call) != nil {
		return Proceed, nil
	}
	return e.cfg.Approver.Approve(turn, call, t.Effect())
}
