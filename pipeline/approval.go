package pipeline

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/rundir"
)

// unitDecisions are the calls of one unit a person decided.
type unitDecisions struct{ approve, deny []string }

// routeDecisions sends each --approve and --deny to the unit whose run
// waits for that call: UNIT:CALL_ID names it, a bare CALL_ID must wait in
// exactly one unit. Which calls wait is read from each resumable unit's
// verified journal; a call waiting nowhere is a usage error.
func (p *pipe) routeDecisions(approve, deny []string) (map[string]unitDecisions, error) {
	out := map[string]unitDecisions{}
	if len(approve)+len(deny) == 0 {
		return out, nil
	}
	waiting := map[string][]string{} // call id -> units
	var all []string
	for name := range p.resumable {
		rep, err := p.verifyUnit(name)
		if err != nil || !rep.OK {
			continue // its own resume reports what is wrong
		}
		for _, w := range rep.Waiting {
			waiting[w.CallID] = append(waiting[w.CallID], name)
			all = append(all, name+":"+w.CallID)
		}
	}
	slices.Sort(all)
	list := strings.Join(all, ", ")
	if list == "" {
		list = "none"
	}
	route := func(id string, deny bool) error {
		unit, call, named := strings.Cut(id, ":")
		if !named {
			unit, call = "", id
		}
		units := waiting[call]
		switch {
		case named && slices.Contains(units, unit):
		case !named && len(units) == 1:
			unit = units[0]
		case !named && len(units) > 1:
			return outcome.Usage("approval_ambiguous", "call %s waits in %s; name one as %s:CALL_ID", call, strings.Join(units, " and "), p.layout.unit)
		default:
			return outcome.Usage("approval_unknown", "call %s is not waiting for approval in any %s (waiting: %s)", id, p.layout.unit, list)
		}
		d := out[unit]
		if deny {
			d.deny = append(d.deny, call)
		} else {
			d.approve = append(d.approve, call)
		}
		out[unit] = d
		return nil
	}
	for _, id := range approve {
		if err := route(id, false); err != nil {
			return nil, err
		}
	}
	for _, id := range deny {
		if err := route(id, true); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// verifyUnit verifies a unit's run directory as it is now, opened once
// beneath the directory.
func (p *pipe) verifyUnit(name string) (*rundir.Report, error) {
	u, err := openUnitRun(p.dir, filepath.Join(p.layout.runs, name))
	if err != nil {
		return nil, err
	}
	defer u.Close()
	return u.verify(p.common.RunKey)
}

// pendingLine says in one line what waits for a person in a unit ("" if
// nothing).
func pendingLine(o record.PhaseOutcome) string {
	var calls []string
	for _, c := range o.PendingApprovals {
		calls = append(calls, fmt.Sprintf("%s:%s (%s)", o.Name, c.CallID, c.Tool))
	}
	if len(calls) == 0 {
		return ""
	}
	return "waiting for approval: " + strings.Join(calls, ", ")
}
