package main

import (
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/record"
)

// events renders journal events as a run writes them: every line of the
// run itself as JSONL on stdout with --json (children's lines stay in their
// own journals), and progress for people on stderr (none with --quiet).
type events struct {
	json     bool
	stdout   io.Writer
	progress *progress

	mu      sync.Mutex // children of one run may write at once
	observe func(line []byte, depth int)
	// warnedUsage is set once the missing-usage warning was printed.
	warnedUsage bool
}

const observerKey = "harness.observer"

// newEvents renders for one command invocation; Close it before the
// command prints its last lines.
func newEvents(cmd *cli.Command, jsonOut, quiet bool) *events {
	e := &events{json: jsonOut, stdout: cmd.Root().Writer, progress: newProgress(cmd.Root().ErrWriter, quiet)}
	e.observe, _ = cmd.Root().Metadata[observerKey].(func([]byte, int))
	return e
}

// stderr is where the run's own lines go: through the progress, so that
// they appear above a live status line.
func (e *events) stderr() io.Writer { return e.progress }

// Close ends the live status line.
func (e *events) Close() { e.progress.Close() }

func (e *events) render(line []byte, depth int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.observe != nil {
		defer e.observe(line, depth)
	}
	if e.json && depth == 0 {
		e.stdout.Write(line)
		e.stdout.Write([]byte("\n"))
	}
	if e.progress.w == nil {
		return
	}
	var ev struct {
		Type string          `json:"type"`
		Data json.RawMessage `json:"data"`
	}
	if json.Unmarshal(line, &ev) != nil {
		return
	}
	p := e.progress
	child := ""
	if depth > 0 {
		child = "child: "
	}
	switch ev.Type {
	case record.EventRunCreated:
		var d record.RunCreated
		if depth == 0 && json.Unmarshal(ev.Data, &d) == nil {
			p.update(func(s *status) {
				s.runID, s.maxTurns, s.maxTokens = d.RunID, d.Inputs.Limits.MaxTurns, d.Inputs.Limits.MaxTokens
			})
		}
	case record.EventRunResumed:
		var d record.RunResumed
		if depth == 0 && json.Unmarshal(ev.Data, &d) == nil {
			p.update(func(s *status) { s.maxTurns, s.maxTokens = d.Limits.MaxTurns, d.Limits.MaxTokens })
		}
	case record.EventModelRequest:
		var d record.ModelRequest
		json.Unmarshal(ev.Data, &d)
		p.update(func(s *status) {
			if depth == 0 {
				s.turn = d.Turn
			}
			s.activity = printable(child + "waiting for the model")
		})
	case record.EventToolStarted:
		var d record.ToolStarted
		json.Unmarshal(ev.Data, &d)
		p.linef("harness: %sturn %d: %s", child, d.Turn, d.Tool)
		p.update(func(s *status) { s.activity = printable(child + "running " + d.Tool) })
	case record.EventToolFinished:
		var d record.ToolFinished
		json.Unmarshal(ev.Data, &d)
		if d.Status != loop.StatusOK {
			p.linef("harness:   %s%s: %s", child, d.Tool, d.Status)
		}
		p.update(func(s *status) { s.activity = "" })
	case record.EventModelRetry:
		var d record.ModelRetry
		json.Unmarshal(ev.Data, &d)
		if d.GiveUp {
			p.linef("harness: provider: attempt %d failed, giving up: %s", d.Attempt, d.Error)
		} else {
			p.linef("harness: provider: attempt %d failed (%s); retrying in %s", d.Attempt, d.Error, (time.Duration(d.DelayMs) * time.Millisecond).String())
		}
		p.update(func(s *status) { s.retries++ })
	case record.EventModelResponse:
		var d record.ModelResponse
		json.Unmarshal(ev.Data, &d)
		if d.Usage.Estimated && !e.warnedUsage {
			e.warnedUsage = true
			p.linef("harness: the provider reports no token usage; counting an estimate (characters/4) toward --max-tokens")
		}
		p.update(func(s *status) { s.tokens += d.Usage.TotalTokens; s.activity = "" })
	case record.EventLimitReached:
		var d record.LimitReached
		json.Unmarshal(ev.Data, &d)
		p.linef("harness: limit reached: %s", d.Limit)
	}
}
