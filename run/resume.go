package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
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
	OnEvent   func(line []byte, depth int)
	Stderr    io.Writer
	Now       func() time.Time
	Version   string

	model loop.Model // a subagent's parent's model
}

// journalState is the run rebuilt from its journal.
type journalState struct {
	started   bool
	token     string
	messages  []loop.Message
	progress  loop.Progress
	toolOrder []loop.ToolStartedEvent
	finished  map[string]bool
	lastSeq   int64
	resumes   int
	tornBytes int
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
	var m record.Manifest
	if err := artifacts.ReadJSON(filepath.Join(dir, record.FileManifest), record.TypeManifest, record.Version, &m); err != nil {
		return nil, outcome.Usage("run_dir_invalid", "%s is not a run directory (no readable run.json): %v", ro.RunDir, err)
	}
	if m.Status == outcome.StatusSucceeded {
		return nil, outcome.Usage("run_succeeded", "run %s already succeeded; there is nothing to resume", m.RunID)
	}
	if ro.Replay == "" && ro.APIKey == "" && ro.model == nil {
		return nil, outcome.Usage("api_key_missing", "no API key: set HARNESS_API_KEY (or OPENAI_API_KEY) to call the model, or pass --replay FILE to continue offline from a cassette")
	}
	if ro.Record != "" && ro.Replay != "" {
		return nil, outcome.Usage("cassette_conflict", "--record and --replay cannot be used together")
	}
	r.manifest = m
	r.opts = optionsOf(m.Inputs, m.Sources)
	r.opts.APIKey, r.opts.Record, r.opts.Replay, r.opts.model = ro.APIKey, ro.Record, ro.Replay, ro.model
	r.redact = artifacts.NewRedactor(ro.APIKey)
	r.opts.OnEvent, r.opts.Stderr, r.opts.Now, r.opts.Version = ro.OnEvent, ro.Stderr, ro.Now, ro.Version
	r.acceptDrift = ro.AllowDrift
	r.res = resolved{workspace: m.Inputs.Workspace.Host, cwd: m.Inputs.Cwd, skillsRoots: r.opts.SkillsRoots, runDir: dir, runID: m.RunID}
	if err := r.loadProfiles(); err != nil {
		return nil, err
	}
	if r.lock, err = lockRunDir(dir, r.now()); err != nil {
		return nil, err
	}
	defer r.lock.release()
	st, err := readJournalState(dir)
	if err != nil {
		return nil, err
	}
	if err := r.openJournal(st.lastSeq + 1); err != nil {
		return nil, err
	}
	defer r.journal.Close()
	r.resumed = st
	r.segment, r.segStart = max(len(m.Segments), st.resumes+1)+1, r.now().UTC()
	r.start, r.token = st.progress, st.token
	if r.limits, err = resumeLimits(m, ro, st.progress.Turns); err != nil {
		return nil, err
	}
	if _, err := r.journal.Append(record.EventRunResumed, record.RunResumed{Segment: r.segment, PreviousStatus: m.Status, TornBytes: st.tornBytes, Limits: record.LimitsOf(r.limits)}); err != nil {
		return nil, err
	}
	if st.tornBytes > 0 {
		r.progress("journal: dropped a torn last line (%d bytes) left by a crash", st.tornBytes)
	}
	r.manifest.Status, r.manifest.Error, r.manifest.FinishedAt = outcome.StatusRunning, nil, nil
	return r.execute(ctx)
}

// resumeLimits applies the limits given on resume: a raised limit counts
// the whole run, "+N" counts from the turns already used.
func resumeLimits(m record.Manifest, ro ResumeOptions, used int) (loop.Limits, error) {
	l := loop.Limits{MaxTurns: m.Inputs.Limits.MaxTurns, MaxTokens: m.Inputs.Limits.MaxTokens, Timeout: ro.Timeout}
	if t := ro.MaxTurns; t != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(t, "+"))
		if err != nil || n < 0 {
			return l, outcome.Usage("limit_invalid", "--max-turns %q must be N or +N", t)
		}
		if strings.HasPrefix(t, "+") {
			n += used
		}
		l.MaxTurns = n
	}
	if ro.MaxTokens > 0 {
		l.MaxTokens = ro.MaxTokens
	}
	return l, nil
}

// readJournalState rebuilds the conversation and progress from the
// journal. A torn last line (a crash mid-write) is cut off; damage before
// the end refuses the resume.
func readJournalState(dir string) (*journalState, error) {
	p := filepath.Join(dir, record.FileJournal)
	f, err := os.Open(p)
	if err != nil {
		return nil, outcome.Usage("run_dir_invalid", "%s has no journal: %v", dir, err)
	}
	c, err := artifacts.ReadJournal(f)
	f.Close()
	if err != nil {
		if errors.Is(err, artifacts.ErrJournalCorrupt) {
			return nil, outcome.Policy("journal_corrupt", "%s: %v; the run cannot be resumed safely", p, err)
		}
		return nil, err
	}
	st := &journalState{finished: map[string]bool{}, tornBytes: c.TornBytes}
	if c.TornTail {
		if err := os.Truncate(p, c.ValidSize); err != nil {
			return nil, fmt.Errorf("repair journal: %w", err)
		}
	}
	corrupt := func(ev artifacts.Event, err error) error {
		return outcome.Policy("journal_corrupt", "journal event %d (%s): %v", ev.Seq, ev.Type, err)
	}
	for _, ev := range c.Events {
		st.lastSeq = ev.Seq
		switch ev.Type {
		case record.EventRunStarted:
			var d record.RunStarted
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				return nil, corrupt(ev, err)
			}
			st.started, st.token, st.messages = true, d.Token, d.Messages
		case record.EventRunResumed:
			st.resumes++
		case record.EventModelResponse:
			var d record.ModelResponse
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				return nil, corrupt(ev, err)
			}
			msg := loop.Message{Role: loop.RoleAssistant, Content: d.Content}
			if len(d.ToolCalls) > 0 {
				msg.ToolCalls = d.ToolCalls
			}
			st.messages = append(st.messages, msg)
			st.progress.Turns++
			st.progress.Usage = st.progress.Usage.Add(d.Usage)
			st.progress.TurnUsage = append(st.progress.TurnUsage, d.Usage)
		case record.EventToolStarted:
			var d record.ToolStarted
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				return nil, corrupt(ev, err)
			}
			st.toolOrder = append(st.toolOrder, d)
		case record.EventToolFinished:
			var d record.ToolFinished
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				return nil, corrupt(ev, err)
			}
			var out record.ToolOutput
			if err := artifacts.ReadJSON(filepath.Join(dir, filepath.FromSlash(d.Output)), record.TypeToolOutput, record.Version, &out); err != nil {
				return nil, outcome.Policy("tool_output_missing", "journal event %d: tool output %s: %v", ev.Seq, d.Output, err)
			}
			st.finished[d.CallID] = true
			st.messages = append(st.messages, loop.Message{Role: loop.RoleTool, Content: out.Content, ToolCallID: d.CallID})
		}
	}
	return st, nil
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
	for _, call := range st.toolOrder {
		// A tool the run no longer offers counts as a side effect.
		if st.finished[call.CallID] || effects[call.Tool] == loop.EffectRead || call.Tool == "delegate_task" {
			continue
		}
		res := loop.ErrorResult("interrupted", fmt.Sprintf("the run stopped while %s was running; its outcome is unknown and it was not repeated: check its effects before calling it again", call.Tool), nil)
		name := fmt.Sprintf("%s-%s-interrupted.json", loop.FileSafe(call.CallID), loop.FileSafe(call.Tool))
		out := loop.ToolOutput{Envelope: artifacts.NewEnvelope(record.TypeToolOutput, record.Version), Turn: call.Turn, CallID: call.CallID, Tool: call.Tool,
			Arguments: call.Arguments, Status: "interrupted", Content: res.Content}
		if err := os.MkdirAll(r.path(record.DirToolOutputs), 0o755); err != nil {
			return nil, err
		}
		if err := r.redact.WriteJSON(filepath.Join(r.path(record.DirToolOutputs), name), out); err != nil {
			return nil, err
		}
		if _, err := r.journal.Append(record.EventToolFinished, loop.ToolFinishedEvent{Turn: call.Turn, CallID: call.CallID, Tool: call.Tool,
			Status: "interrupted", Code: "interrupted", Output: record.DirToolOutputs + "/" + name}); err != nil {
			return nil, err
		}
		st.finished[call.CallID] = true
		history = append(history, loop.Message{Role: loop.RoleTool, Content: res.Content, ToolCallID: call.CallID})
	}
	return history, nil
}
