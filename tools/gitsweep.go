package tools

// After a sandboxed call: the sweep of git's control paths and what it
// means for the call and the run.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/harness-dev/harness/grant"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/scripts"
)

// sweptProtected is the refusal of a call after which the sweep found
// git's control paths changed (made is what it found and undid), and the
// changes it could not wholly undo: the caller records those and ends the
// run.
func sweptProtected(what string, made []grant.Change) (code, msg string, left []string) {
	undone := "it was undone: a .git made is removed, one moved is moved back"
	for _, c := range made {
		if c.Left {
			left = append(left, c.String())
		}
	}
	if len(left) > 0 {
		undone = "NOT all of it could be undone (see each entry): do not run git in this workspace before looking; the run ends here"
	}
	return "protected_path", fmt.Sprintf("the %s made %s, which is kept read-only (git runs hooks and configured commands from a .git on the host, outside every sandbox; harness and the next run use the rest); %s", what, strings.Join(grant.Strings(made), ", "), undone), left
}

// afterRun is the refusal a finished script or command call ends in ("" when
// it ran): a protected path it changed (undone by the sweep), an interrupt,
// or a start the sandbox refused. what names the thing run. left are the
// changes the sweep could not wholly undo: the caller records them and
// ends the run (notUndone).
func afterRun(ctx context.Context, g *grant.Grant, err error, what string) (code, msg string, left []string) {
	if made := g.Sweep(); len(made) > 0 {
		return sweptProtected(what, made)
	}
	if err == nil {
		return "", "", nil
	}
	if ctx.Err() != nil && !errors.As(err, new(*scripts.Refusal)) {
		return "interrupted", fmt.Sprintf("the run was interrupted while the %s ran; it was killed", what), nil
	}
	code, msg = refusal(err, what+"_failed_to_start")
	return code, msg, nil
}

// notUndone ends the run after a call whose changes to git's control
// paths the sweep could not wholly undo: the workspace may hold what git
// runs on the host, and the next call would start from it.
func notUndone(tool string, left []string) error {
	return &outcome.Error{Code: "protected_path_not_undone", Exit: outcome.ExitFailed,
		Msg: fmt.Sprintf("%s changed git control paths of the workspace that harness could not put back: %s; do not run git in this workspace before looking (git runs hooks and configured commands from there on the host); the run was stopped", tool, strings.Join(left, ", "))}
}

// addWriter keeps the grant of a skill server that can write the
// workspace, for the sweeps.
func (h *MCPHub) addWriter(g *grant.Grant) {
	if len(g.Record.Write) == 0 {
		return
	}
	h.sweepMu.Lock()
	h.writers = append(h.writers, g)
	h.sweepMu.Unlock()
}

// sweep undoes what the skill servers that can write did to git's
// control paths, as the sweep after a script's call does (afterRun);
// what names the servers in the message.
func (h *MCPHub) sweep(what string) (code, msg string, left []string) {
	h.sweepMu.Lock()
	defer h.sweepMu.Unlock()
	var made []grant.Change
	for _, g := range h.writers {
		for _, c := range g.Sweep() {
			if !slices.ContainsFunc(made, func(m grant.Change) bool { return m.Path == c.Path }) {
				made = append(made, c)
			}
		}
	}
	if len(made) == 0 {
		return "", "", nil
	}
	return sweptProtected(what, made)
}
