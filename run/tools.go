package run

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/harness-dev/harness/loop"
)

// knownTools are the tool names --allow-tool accepts.
var knownTools = []string{"list_files", "load_skill", "read_file", "read_skill_resource", "run_skill_script", "skills", "write_file", "delegate_task"}

// tools builds the tool set the model is offered: read tools always,
// write and side-effect tools only when the operator allowed them by name.
func (r *runner) tools(ctx context.Context) ([]loop.Tool, func(), error) {
	ws := &Workspace{
		Host:      r.res.workspace,
		Sandbox:   SandboxWorkspace,
		Cwd:       r.res.cwd,
		Protected: r.protectedPaths(),
	}
	r.ws = ws
	ft, err := fileTools(ws, slices.Contains(r.opts.AllowTools, "write_file"))
	if err != nil {
		return nil, nil, fmt.Errorf("open workspace: %w", err)
	}
	tools := append(ft.tools, r.skillTools()...)
	cleanup := func() { ft.Close() }
	if slices.Contains(r.opts.AllowTools, delegateToolName) && len(r.profiles) > 0 && r.opts.depth < r.opts.maxDepth {
		tools = append(tools, &delegateTool{r: r, profiles: r.profiles, model: r.sharedModel})
	}
	if slices.Contains(r.opts.AllowTools, "run_skill_script") {
		st := r.scriptTool(ctx)
		tools = append(tools, st)
		cleanup = func() { ft.Close(); st.cleanup() }
	}
	return tools, cleanup, nil
}

// protectedPaths lists what tools must never touch inside the workspace:
// the artifacts directory (this run's and every other run's records) and a
// cassette being recorded.
func (r *runner) protectedPaths() []string {
	var out []string
	for _, p := range []string{filepath.Dir(r.res.runDir), absOrEmpty(r.opts.Record)} {
		if p == "" {
			continue
		}
		real := p
		if rp, err := filepath.EvalSymlinks(p); err == nil {
			real = rp
		}
		if within(r.res.workspace, real) {
			rel, _ := filepath.Rel(r.res.workspace, real)
			out = append(out, filepath.ToSlash(rel))
		}
	}
	return out
}

func absOrEmpty(p string) string {
	if p == "" {
		return ""
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return ""
	}
	return abs
}

// model builds the model the loop talks to: a cassette player for
// --replay, otherwise the OpenAI-compatible provider, wrapped in a recorder
// for --record.
func (r *runner) model() (loop.Model, func(), error) {
	if r.opts.model != nil {
		return r.opts.model, func() {}, nil
	}
	if r.opts.Replay != "" {
		p, err := loop.OpenCassette(r.opts.Replay)
		if err != nil {
			return nil, nil, usageErr("cassette_invalid", "--replay %s: %v", r.opts.Replay, err)
		}
		return p, func() {}, nil
	}
	var m loop.Model = loop.NewOpenAI(loop.OpenAIConfig{
		BaseURL: r.opts.BaseURL,
		APIKey:  r.opts.APIKey,
		OnAttempt: func(a loop.Attempt) {
			r.journal.Append("model.retry", a)
		},
	})
	if r.opts.Record == "" {
		return m, func() {}, nil
	}
	rec, err := loop.NewRecorder(m, r.opts.Record)
	if err != nil {
		return nil, nil, usageErr("cassette_invalid", "--record %s: %v", r.opts.Record, err)
	}
	return rec, func() { rec.Close() }, nil
}
