package run

import (
	"context"
	"path/filepath"
	"slices"

	"github.com/harness-dev/harness/grant"
	"github.com/harness-dev/harness/runopts"
	"github.com/harness-dev/harness/tools"
)

// gitScan is the index of the workspace's git control paths
// (grant.NewGitScan), walked when the first tool call that writes needs
// it; nil when no tool the run offers can change the workspace, as a run
// that only reads has nothing to protect.
func (r *runner) gitScan(ctx context.Context) *grant.GitIndex {
	allow := r.opts.AllowTools
	if !slices.Contains(allow, "write_file") && !slices.Contains(allow, "run_skill_script") && !slices.Contains(allow, tools.CommandToolName) &&
		!runopts.ForgeAllowed(allow) && !r.opts.MCPWanted() {
		return nil
	}
	// The run directories and what the operator hides are never shown to
	// a tool: nothing there to find.
	skip := append([]string{r.manifest.Inputs.ArtifactsDir, filepath.Dir(r.res.runDir), runopts.Abs(r.opts.Record)}, r.opts.Protect...)
	return grant.NewGitScan(ctx, r.res.workspace, skip, runopts.AbsAll(r.opts.AllowProtectedWrite))
}
