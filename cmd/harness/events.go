package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/record"
	"github.com/urfave/cli/v3"
)

// events renders journal events as a run writes them: every line of the
// run itself as JSONL on stdout with --json (children's lines stay in their
// own journals), and progress for people on stderr (none with --quiet).
type events struct {
	json     bool
	stdout   io.Writer
	progress io.Writer // nil = quiet

	mu      sync.Mutex // children of one run may write at once
	observe func(line []byte, depth int)
	// warnedUsage is set once the missing-usage warning was printed.
	warnedUsage bool
}

const observerKey = "harness.observer"

// newEvents renders for one command invocation.
func newEvents(cmd *cli.Command, jsonOut, quiet bool) *events {
	e := &events{json: jsonOut, stdout: cmd.Root().Writer, progress: progressWriter(cmd.Root().ErrWriter, quiet)}
	e.observe, _ = cmd.Root().Metadata[observerKey].(func([]byte, int))
	return e
}

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
	if e.progress == nil {
		return
	}
	var ev struct {
		Type string          `json:"type"`
		Data json.RawMessage `json:"data"`
	}
	if json.Unmarshal(line, &ev) != nil {
		return
	}
	switch ev.Type {
	case record.EventToolStarted:
		var d record.ToolStarted
		json.Unmarshal(ev.Data, &d)
		fmt.Fprintf(e.progress, "harness: turn %d: %s\n", d.Turn, d.Tool)
	case record.EventToolFinished:
		var d record.ToolFinished
		json.Unmarshal(ev.Data, &d)
		if d.Status != loop.StatusOK {
			fmt.Fprintf(e.progress, "harness:   %s: %s\n", d.Tool, d.Status)
		}
	case record.EventModelRetry:
		var d record.ModelRetry
		json.Unmarshal(ev.Data, &d)
		if d.GiveUp {
			fmt.Fprintf(e.progress, "harness: provider: attempt %d failed, giving up: %s\n", d.Attempt, d.Error)
		} else {
			fmt.Fprintf(e.progress, "harness: provider: attempt %d failed (%s); retrying in %s\n", d.Attempt, d.Error, time.Duration(d.DelayMs)*time.Millisecond)
		}
	case record.EventModelResponse:
		var d record.ModelResponse
		json.Unmarshal(ev.Data, &d)
		if d.Usage.Estimated && !e.warnedUsage {
			e.warnedUsage = true
			fmt.Fprintln(e.progress, "harness: the provider reports no token usage; counting an estimate (characters/4) toward --max-tokens")
		}
	case record.EventLimitReached:
		var d record.LimitReached
		json.Unmarshal(ev.Data, &d)
		fmt.Fprintf(e.progress, "harness: limit reached: %s\n", d.Limit)
	}
}

// progressWriter is stderr, or nil with --quiet.
func progressWriter(stderr io.Writer, quiet bool) io.Writer {
	if quiet {
		return nil
	}
	return stderr
}
