package run

import (
	"context"
	"path/filepath"
	"slices"

	"github.com/harness-dev/harness/grant"
	"github.com/harness-dev/harness/runopts"
	"github.com/harness-dev/harness/tools"
)

// gitScan is the one walk of the workspace for its git control paths
// (grant.ScanGit). It starts with the run, beside the registry scan, and
// the tool set waits for it.
type gitScan struct {
	done   chan struct{}
	cancel context.CancelFunc
	idx    *grant.GitIndex
	err    error
}

// startGitScan starts the walk when a tool the run offers can change the
// workspace; a run that only reads has nothing to protect.
func (r *runner) startGitScan(ctx context.Context) {
	allow := r.opts.AllowTools
	if !slices.Contains(allow, "write_file") && !slices.Contains(allow, "run_skill_script") && !slices.Contains(allow, tools.CommandToolName) &&
		!runopts.ForgeAllowed(allow) && !r.opts.MCPWanted() {
		return
	}
	// The run directories and what the operator hides are never shown to
	// a tool: nothing there to find.
	skip := append([]string{r.manifest.Inputs.ArtifactsDir, filepath.Dir(r.res.runDir), runopts.Abs(r.opts.Record)}, r.opts.Protect...)
	allowed := runopts.AbsAll(r.opts.AllowProtectedWrite)
	ctx, cancel := context.WithCancel(ctx)
	s := &gitScan{done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(s.done)
		s.idx, s.err = grant.ScanGit(ctx, r.res.workspace, skip, allowed)
	}()
	r.gitScan = s
}

// gitIndex waits for the walk (nil when none was started).
func (r *runner) gitIndex() (*grant.GitIndex, error) {
	if r.gitScan == nil {
		return nil, nil
	}
	<-r.gitScan.done
	return r.gitScan.idx, r.gitScan.err
}

// stopGitScan ends a walk no tool set waited for (a run that failed
// before it built one).
func (r *runner) stopGitScan() {
	if r.gitScan != nil {
		r.gitScan.cancel()
		<-r.gitScan.done
	}
}
