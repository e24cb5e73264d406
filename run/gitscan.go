package run

import (
	"context"
	"path/filepath"
	"slices"

	"github.com/harness-dev/harness/grant"
	"github.com/harness-dev/harness/runopts"
	"github.com/harness-dev/harness/tools"
)

// startGitScan starts the one walk of the workspace for its git control
// paths (grant.StartGitScan) when a tool the run offers can change the
// workspace; a run that only reads has nothing to protect. It runs
// beside the registry scan and the first model request; the first tool
// call that writes waits for it.
func (r *runner) startGitScan(ctx context.Context) {
	allow := r.opts.AllowTools
	if !slices.Contains(allow, "write_file") && !slices.Contains(allow, "run_skill_script") && !slices.Contains(allow, tools.CommandToolName) &&
		!runopts.ForgeAllowed(allow) && !r.opts.MCPWanted() {
		return
	}
	// The run directories and what the operator hides are never shown to
	// a tool: nothing there to find.
	skip := append([]string{r.manifest.Inputs.ArtifactsDir, filepath.Dir(r.res.runDir), runopts.Abs(r.opts.Record)}, r.opts.Protect...)
	ctx, cancel := context.WithCancel(ctx)
	r.git = grant.StartGitScan(ctx, r.res.workspace, skip, runopts.AbsAll(r.opts.AllowProtectedWrite))
	r.stopGit = cancel
}

// stopGitScan ends the walk when the run ends before it does.
func (r *runner) stopGitScan() {
	if r.git != nil {
		r.stopGit()
		r.git.Wait()
	}
}
