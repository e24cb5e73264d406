package run

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/harness-dev/harness/approval"
	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/internal/termsafe"
	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/resolve"
	"github.com/harness-dev/harness/rundir"
	"github.com/harness-dev/harness/runopts"
)

// ResumeOptions are what `harness resume` may set. Everything else is
// the run's recorded inputs: a resume continues the same run.
type ResumeOptions struct {
	RunDir     string
	AllowDrift bool
	// MaxTurns is "" (keep the recorded limit), "N" (at most N turns in
	// all) or "+N" (N more turns than already used).
	MaxTurns  string
	Timeout   time.Duration // wall clock for this segment; 0 = none
	MaxTokens int64         // 0 = keep the recorded limit
	Record    string
	Replay    string
	APIKey    string
	// Transport to the model, as for a run.
	RequestTimeout time.Duration
	MaxRetries     *int
	RetryMaxWait   time.Duration
	// SnapshotCache is as in Options (the drift check's re-scan uses it).
	SnapshotCache string
	// Protect are paths this segment's tools must not reach besides those
	// the run recorded: where a directory holding the run (a pipeline's)
	// is now, when it was moved since. Not recorded, and no drift.
	Protect []string
	// IndexCache is where discover_skills keeps fetched skill indexes.
	IndexCache string
	// EvalDraft runs a SkillForge draft's evals, as in Options: the gate
	// is the run's recorded one, the hook the caller's.
	EvalDraft runopts.DraftEvaluator
	// RunKey is HARNESS_RUN_KEY: a sealed run resumes only with it.
	RunKey []byte
	// BaseURL moves the run to another endpoint: transport, not identity.
	// The key goes only to the URL the verified journal recorded or to
	// this one, which the operator gave.
	BaseURL string
	// ExpectWorkspace and ExpectPromptRole, when set, are what the
	// operator's environment says; a run directory that disagrees is
	// refused.
	ExpectWorkspace  string
	ExpectPromptRole string
	// FollowUp, for a run that succeeded, is a new instruction from the
	// operator (harness continue): a new segment of the same run.
	FollowUp string
	// Outputs override, for this resume, where the run delivers its
	// result and answer (recorded when it started); "" keeps the run's.
	Outputs record.Outputs
	// Model, with AllowModelChange, continues the run on another model;
	// the change is recorded as drift and in the journal.
	Model            string
	AllowModelChange bool
	// WireAPI, with AllowModelChange, continues the run over another wire
	// API ("" keeps the recorded one); the change is recorded as drift.
	WireAPI string
	// Tiers, when given, replace the recorded tier map (--tier): which
	// model a tier's work runs on is policy, so a change is drift, refused
	// unless AllowDrift.
	Tiers         []string
	FallbackModel string
	Stream        bool
	// Approve and Deny decide calls the run left waiting for a person;
	// DenyReason is told to the model, Actor names who decided (default:
	// the OS user).
	Approve, Deny     []string
	DenyReason, Actor string
	OnEvent           func(line []byte, depth int)
	Stderr            io.Writer
	Now               func() time.Time
	Version           string

	model loop.Model // a subagent's parent's model
	// byParent is set when a parent run resumes its delegate_task child:
	// a child run directory is resumed only that way.
	byParent bool
	// decided are a parent run's decisions about this child's waiting
	// calls (ids as the child knows them), each with who made it.
	decided []record.ApprovalDecided
}

// Resume continues a run that stopped (limit, provider error, interrupt,
// crash) from its journal, after checking that nothing it depends on
// drifted.
func Resume(ctx context.Context, ro ResumeOptions) (*Result, error) {
	r := newRunner(ro.Now, ro.Stderr)
	dir, err := filepath.Abs(ro.RunDir)
	if err != nil {
		return nil, outcome.Usage("run_dir_invalid", "%s: %v", ro.RunDir, err)
	}
	m, err := rundir.ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	// One process at a time, and what is read below is what no other
	// process is changing: the lock comes before the directory is read
	// as input (run.json is read again under it).
	if r.lock, err = rundir.TakeLock(dir, r.now()); err != nil {
		return nil, err
	}
	defer r.lock.Release()
	if m, err = rundir.ReadManifest(dir); err != nil {
		return nil, err
	}
	switch {
	case ro.FollowUp != "" && m.Status != outcome.StatusSucceeded:
		return nil, outcome.Usage("run_not_succeeded", "run %s has not succeeded (%s): a follow-up goes to a run that finished its task; finish this one with `harness resume %s`", m.RunID, m.Status, dir)
	case ro.FollowUp == "" && m.Status == outcome.StatusSucceeded:
		return nil, outcome.Usage("run_succeeded", "run %s already succeeded; there is nothing to resume (give it a follow-up with `harness continue %s --prompt TEXT`)", m.RunID, dir)
	}
	if ro.Replay == "" && ro.APIKey == "" && ro.model == nil && ro.BaseURL == "" && m.Inputs.BaseURL == "" {
		return nil, outcome.Usage("api_key_missing", "no API key: set HARNESS_API_KEY (or OPENAI_API_KEY) to call the model, or pass --replay FILE to continue offline from a cassette")
	}
	if ro.Record != "" && ro.Replay != "" {
		return nil, outcome.Usage("cassette_conflict", "--record and --replay cannot be used together")
	}
	if ro.BaseURL != "" {
		if err := runopts.CheckBaseURL(ro.BaseURL); err != nil {
			return nil, err
		}
	}
	r.opts.RunKey = ro.RunKey
	r.opts.SnapshotCache = ro.SnapshotCache
	// Everything below reads the run directory as input: verify it first.
	st, err := rundir.Open(dir, m, ro.RunKey)
	if err != nil {
		return nil, err
	}
	if d := st.Created.Inputs.Depth; d > 0 && !ro.byParent {
		// A child's waiting calls are its parent's too: deciding or
		// running them behind the parent's back would leave the parent
		// listing, and later deciding, a call that already ran.
		parent := filepath.Dir(filepath.Dir(dir))
		return nil, outcome.Usage("run_is_child", "run %s is a delegate_task child (depth %d) and is resumed only through its parent: run `harness resume %s` (a call waiting in this child is decided there as %s/CALL_ID, e.g. --approve %s/CALL_ID); nothing was run", termsafe.Escape(m.RunID), d, termsafe.Escape(parent), termsafe.Escape(m.RunID), termsafe.Escape(m.RunID))
	}
	if err := childrenPresent(dir, st); err != nil {
		return nil, err
	}
	if err := expectEnvironment(st.Created.Inputs, ro); err != nil {
		return nil, err
	}
	// Limits are settled before anything is written: a follow-up they
	// leave no turn is refused with the run's answer and files as they
	// were.
	base := st.Created.Inputs.Limits
	if ro.FollowUp == "" && st.FollowUpLimits != nil {
		base = *st.FollowUpLimits
	}
	limits, err := resumeLimits(base, ro, st.Progress)
	if err != nil {
		return nil, err
	}
	if ro.FollowUp != "" && limits.MaxTurns > 0 && limits.MaxTurns <= st.Progress.Turns {
		return nil, outcome.Usage("follow_up_no_turns", "--max-turns %s leaves the follow-up no turn: the run used %d of --max-turns %d; pass --max-turns +N to give the follow-up N turns of its own (without --max-turns it gets the run's %d); nothing was run", ro.MaxTurns, st.Progress.Turns, limits.MaxTurns, st.Created.Inputs.Limits.MaxTurns)
	}
	r.manifest = m
	r.opts, r.lin = optionsOf(st.Created.Inputs, st.Created.Sources)
	r.opts.Protect = append(r.opts.Protect, runopts.AbsAll(ro.Protect)...)
	r.opts.IndexCache = ro.IndexCache
	r.opts.EvalDraft = ro.EvalDraft
	if o := st.Created.Outputs; o != nil {
		r.opts.Outputs = *o
	}
	r.opts.Outputs.ResultFile = cmp.Or(ro.Outputs.ResultFile, r.opts.Outputs.ResultFile)
	r.opts.Outputs.LastMessage = cmp.Or(ro.Outputs.LastMessage, r.opts.Outputs.LastMessage)
	// A file that is now unusable is refused when the servers would
	// start; an edited one is policy drift.
	r.opts.ReadMCPFile()
	// An edited or unreadable grant is policy drift, or refused below.
	if err := r.opts.ReadCommandGrant(); err != nil {
		return nil, err
	}
	r.decisions = approval.Decisions{Approve: ro.Approve, Deny: ro.Deny, Reason: ro.DenyReason, Actor: ro.Actor}
	r.opts.RunKey = ro.RunKey
	if ro.BaseURL != "" {
		r.opts.BaseURL = ro.BaseURL
	}
	if ro.Model != "" && ro.Model != r.opts.Model {
		if !ro.AllowModelChange {
			return nil, outcome.Usage("model_change", "--model %s: run %s was started with model %s; pass --allow-model-change to continue it on another model (recorded as drift)", ro.Model, m.RunID, r.opts.Model)
		}
		r.opts.Model, r.acceptModelChange = ro.Model, true
	}
	if ro.WireAPI != "" && ro.WireAPI != r.opts.Wire() {
		if err := runopts.CheckWireAPI(ro.WireAPI); err != nil {
			return nil, err
		}
		if !ro.AllowModelChange {
			return nil, outcome.Usage("wire_api_change", "--wire-api %s: run %s was started over the %s wire API; pass --allow-model-change to continue it over another (recorded as drift)", ro.WireAPI, m.RunID, r.opts.Wire())
		}
		r.opts.WireAPI, r.acceptModelChange = ro.WireAPI, true
	}
	if len(ro.Tiers) > 0 {
		if _, err := runopts.TierMap(ro.Tiers); err != nil {
			return nil, err
		}
		r.opts.Tiers = ro.Tiers
	}
	r.opts.FallbackModel, r.opts.Stream = ro.FallbackModel, ro.Stream
	r.opts.APIKey, r.opts.Record, r.opts.Replay, r.lin.model = ro.APIKey, ro.Record, ro.Replay, ro.model
	r.redact = artifacts.NewRedactor(append([]string{ro.APIKey, string(ro.RunKey)}, artifacts.URLSecrets(ro.BaseURL)...)...)
	r.opts.OnEvent, r.opts.Stderr, r.opts.Now, r.opts.Version = ro.OnEvent, ro.Stderr, ro.Now, ro.Version
	r.opts.RequestTimeout, r.opts.MaxRetries, r.opts.RetryMaxWait = ro.RequestTimeout, ro.MaxRetries, ro.RetryMaxWait
	r.acceptDrift = ro.AllowDrift
	r.res = resolved{workspace: r.opts.Workspace, cwd: r.opts.Cwd, skillsRoots: r.opts.SkillsRoots, externalRoots: r.opts.ExternalSkillsRoots, runDir: dir, runID: m.RunID, attachments: st.Created.Inputs.Attachments}
	if err := r.loadProfiles(); err != nil {
		return nil, err
	}
	if err := approval.Check(st, r.decisions, m.RunID); err != nil {
		return nil, err
	}
	r.decisions.Inherited = approval.StillWaiting(st, ro.decided)
	if st.TornBytes > 0 {
		if err := rundir.TruncateJournal(dir, st.ValidSize); err != nil {
			return nil, fmt.Errorf("repair journal: %w", err)
		}
	}
	if err := r.openJournal(st.LastSeq+1, st.Head); err != nil {
		return nil, err
	}
	defer r.journal.Close()
	if err := r.restoreOutputs(st.Restored); err != nil {
		return nil, err
	}
	r.resumed = st
	r.segment, r.segStart = max(len(m.Segments), st.Resumes+1)+1, r.now().UTC()
	r.start, r.token = st.Progress, st.Token
	r.limits = limits
	if m.Final != nil {
		r.prevAnswer = m.Final.Content
	}
	// run.json says running before the journal goes on: a crash between
	// the two would otherwise leave a run.json that says the run ended
	// and a journal past its end, which no resume could tell from an edit.
	r.manifest.Status, r.manifest.Error, r.manifest.FinishedAt = outcome.StatusRunning, nil, nil
	if err := r.writeManifest(); err != nil {
		return nil, err
	}
	if _, err := r.journal.Append(record.EventRunResumed, record.RunResumed{Segment: r.segment, PreviousStatus: m.Status, TornBytes: st.TornBytes, Limits: record.LimitsOf(r.limits)}); err != nil {
		return nil, err
	}
	if st.TornBytes > 0 {
		r.progress("journal: dropped a torn last line (%d bytes) left by a crash", st.TornBytes)
	}
	if ro.FollowUp != "" {
		// The follow-up is journaled before the loop sees it: a resume of
		// this segment rebuilds it from the journal like the task.
		msg := r.redact.String(followUpMessage(ro.FollowUp))
		if _, err := r.journal.Append(record.EventRunContinued, record.RunContinued{Segment: r.segment, Message: msg,
			PromptDigest: artifacts.DigestString(ro.FollowUp), Role: r.opts.PromptRole}); err != nil {
			return nil, err
		}
		st.Messages = append(st.Messages, loop.Message{Role: loop.RoleUser, Content: msg})
		st.FollowUps = append(st.FollowUps, msg)
	}
	r.manifest.Status, r.manifest.Error, r.manifest.FinishedAt = outcome.StatusRunning, nil, nil
	return r.execute(ctx)
}

// MaxTurnsBound is the most turns a resumed run may be given.
const MaxTurnsBound = 1_000_000

// resumeLimits applies the limits given on resume: a raised limit counts
// the whole run, "+N" counts from the turns already used. A follow-up
// (continue) is a new task: without --max-turns or --max-tokens it gets
// the run's recorded turn and token limits again, counted from what the
// run already used, so that a run which answered on its last turn can
// take one. A plain resume of a follow-up gets recorded as the limits
// that follow-up was given, so that a crash does not take its turns away.
func resumeLimits(recorded record.Limits, ro ResumeOptions, used loop.Progress) (loop.Limits, error) {
	l := loop.Limits{MaxTurns: recorded.MaxTurns, MaxTokens: recorded.MaxTokens, Timeout: ro.Timeout, MaxToolCallsPerTurn: recorded.MaxToolCallsPerTurn}
	if ro.FollowUp != "" {
		if l.MaxTurns > 0 {
			l.MaxTurns += used.Turns
		}
		if l.MaxTokens > 0 {
			l.MaxTokens += used.Usage.TotalTokens
		}
	}
	if t := ro.MaxTurns; t != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(t, "+"))
		if err != nil || n < 0 {
			return l, outcome.Usage("limit_invalid", "--max-turns %q must be N or +N", t)
		}
		// A bound keeps "+N" from wrapping round into a negative limit,
		// which the loop reads as none.
		if n > MaxTurnsBound {
			return l, outcome.Usage("limit_invalid", "--max-turns %q is over the bound: a run takes at most %d turns", t, MaxTurnsBound)
		}
		if strings.HasPrefix(t, "+") {
			n += used.Turns
		}
		if n > MaxTurnsBound {
			return l, outcome.Usage("limit_invalid", "--max-turns %q with the %d turns the run used is over the bound: a run takes at most %d turns", t, used.Turns, MaxTurnsBound)
		}
		l.MaxTurns = n
	}
	if ro.MaxTokens > 0 {
		l.MaxTokens = ro.MaxTokens
	}
	return l, nil
}

// settleInterrupted decides the fate of tool calls that started but never
// finished. A read runs again (the loop finds it pending). A write or
// side effect is not repeated: the model is told its outcome is unknown,
// and the call is recorded as interrupted. A subagent is not repeated
// either: delegate_task finds the child's run directory and resumes it
// from its own journal.
func (r *runner) settleInterrupted(history []loop.Message, toolset []loop.Tool) ([]loop.Message, error) {
	st := r.resumed
	effects := map[string]loop.Effect{}
	for _, t := range toolset {
		effects[t.Spec().Name] = t.Effect()
	}
	for _, call := range st.ToolOrder {
		// A tool the run no longer offers counts as a side effect.
		if st.Finished[call.CallID] || effects[call.Tool] == loop.EffectRead || call.Tool == "delegate_task" {
			continue
		}
		res := loop.ErrorResult("interrupted", fmt.Sprintf("the run stopped while %s was running; its outcome is unknown and it was not repeated: check its effects before calling it again", call.Tool), nil)
		name := fmt.Sprintf("%s-%s-interrupted.json", loop.FileSafe(call.CallID), loop.FileSafe(call.Tool))
		out := loop.ToolOutput{Envelope: artifacts.NewEnvelope(record.TypeToolOutput, record.Version), Turn: call.Turn, CallID: call.CallID, Tool: call.Tool,
			Arguments: call.Arguments, Status: "interrupted", Content: res.Content}
		if err := os.MkdirAll(r.path(record.DirToolOutputs), 0o755); err != nil {
			return nil, err
		}
		digest, err := r.redact.WriteJSONDigest(filepath.Join(r.path(record.DirToolOutputs), name), out)
		if err != nil {
			return nil, err
		}
		if _, err := r.journal.Append(record.EventToolFinished, loop.ToolFinishedEvent{Turn: call.Turn, CallID: call.CallID, Tool: call.Tool,
			Status: "interrupted", Code: "interrupted", Output: record.DirToolOutputs + "/" + name, OutputDigest: digest}); err != nil {
			return nil, err
		}
		st.Finished[call.CallID] = true
		history = append(history, loop.Message{Role: loop.RoleTool, Content: res.Content, ToolCallID: call.CallID})
	}
	return history, nil
}

// restoreOutputs writes again the tool outputs that only the journal
// still holds (see rundir.State.restorable), each recorded in the journal
// before the run goes on.
func (r *runner) restoreOutputs(outs []rundir.RestoredOutput) error {
	if len(outs) > 0 {
		// The directory itself may be what the power cut lost.
		if err := os.Mkdir(r.path(record.DirToolOutputs), 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("restore tool outputs: %w", err)
		}
	}
	for _, o := range outs {
		if err := artifacts.WriteBeneath(r.res.runDir, filepath.FromSlash(o.Output), o.Data, 0o644); err != nil {
			return fmt.Errorf("restore tool output %s: %w", o.Output, err)
		}
		if _, err := r.journal.Append(record.EventToolOutputRestored, o.ToolOutputRestored); err != nil {
			return err
		}
	}
	return nil
}

// expectEnvironment compares what the operator's environment says (the
// workspace, the prompt's role), when given, with what the run recorded.
func expectEnvironment(in record.Inputs, ro ResumeOptions) error {
	if ro.ExpectWorkspace != "" {
		ws, err := resolve.Workspace(ro.ExpectWorkspace)
		if err != nil {
			return err
		}
		if ws != in.Workspace.Host {
			return outcome.Policy("workspace_mismatch", "--workspace %s resolves to %s, but the run's workspace is %s: this is not that run's workspace", ro.ExpectWorkspace, ws, in.Workspace.Host)
		}
	}
	if ro.ExpectPromptRole != "" && ro.ExpectPromptRole != in.PromptRole {
		return outcome.Policy("prompt_role_mismatch", "--prompt-role %s, but the run's prompt role is %s", ro.ExpectPromptRole, in.PromptRole)
	}
	return nil
}

// childrenPresent refuses a run whose journal names a call waiting in a
// delegate_task child whose run directory is gone: delegate_task would
// start a new child under the same id, and decisions about the old
// child's calls would be handed to calls of the new one that share their
// ids.
func childrenPresent(dir string, st *rundir.State) error {
	seen := map[string]bool{}
	for _, id := range slices.Sorted(maps.Keys(st.ApprovalsRequested)) {
		child := st.ApprovalsRequested[id].Child
		if child == "" || seen[child] {
			continue
		}
		seen[child] = true
		if _, err := artifacts.ReadBeneath(dir, filepath.Join(filepath.FromSlash(child), record.FileManifest)); err != nil {
			return outcome.Policy("run_dir_tampered", "the run directory was changed after harness wrote it: call %s waits in child run %s, whose run.json cannot be read (%v); nothing was run. Start the run again, or check the directory with `harness verify`", termsafe.Escape(id), termsafe.Escape(child), err)
		}
	}
	return nil
}
