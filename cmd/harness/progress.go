package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/x/ansi"
	"golang.org/x/term"

	"github.com/harness-dev/harness/internal/termsafe"
)

// progress is what people see on stderr while a run works. On a terminal
// it keeps one status line, redrawn in place, and prints lasting lines
// above it; anywhere else (a CI log, a file, a pipe) it prints plain
// one-line events with no control characters. With --quiet it prints
// nothing at all.
type progress struct {
	mu   sync.Mutex
	w    io.Writer // nil: quiet
	tty  *os.File  // set when the status line is live
	now  func() time.Time
	st   status
	tick *time.Ticker
	done chan struct{}
	// drawn is set while a status line is on the screen.
	drawn  bool
	closed bool
}

// status is what the live line shows.
type status struct {
	runID             string
	started           time.Time
	turn, maxTurns    int
	tokens, maxTokens int64
	activity          string
	retries           int
}

// newProgress decides between the live line and plain lines once, from
// what stderr is: a terminal (and TERM is not "dumb") gets the live line.
func newProgress(stderr io.Writer, quiet bool) *progress {
	p := &progress{now: time.Now}
	if quiet {
		return p
	}
	p.w = stderr
	if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) && os.Getenv("TERM") != "dumb" {
		p.tty = f
		p.st.started = p.now()
		p.tick, p.done = time.NewTicker(time.Second), make(chan struct{})
		go p.ticking()
	}
	return p
}

// ticking redraws the line every second so that the elapsed time moves
// while the model thinks.
func (p *progress) ticking() {
	for {
		select {
		case <-p.done:
			return
		case <-p.tick.C:
			p.mu.Lock()
			if !p.closed {
				p.draw()
			}
			p.mu.Unlock()
		}
	}
}

// Write passes lines from the run (its start and end, warnings) through,
// above the status line, with control characters other than newlines and
// tabs escaped: a provider's error body can carry anything.
func (p *progress) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.w == nil {
		return len(b), nil
	}
	p.clear()
	_, err := io.WriteString(p.w, termsafe.Lines(string(b)))
	p.draw()
	return len(b), err
}

// linef prints one lasting line. Every value in it is escaped:
// tool names and errors come from the model or the network, and an escape
// sequence in them must not reach a terminal or a log.
func (p *progress) linef(format string, args ...any) {
	for i, a := range args {
		if s, ok := a.(string); ok {
			args[i] = printable(s)
		}
	}
	fmt.Fprintf(p, format+"\n", args...)
}

// update changes the status and redraws it (live) or does nothing
// (plain lines carry no status).
func (p *progress) update(f func(*status)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(&p.st)
	if p.tty != nil && !p.closed {
		p.draw()
	}
}

// Close removes the status line; later writes are plain lines.
func (p *progress) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	if p.tty != nil {
		p.tick.Stop()
		close(p.done)
		p.clear()
	}
}

func (p *progress) clear() {
	if p.tty != nil && p.drawn {
		io.WriteString(p.w, "\r"+ansi.EraseEntireLine)
		p.drawn = false
	}
}

func (p *progress) draw() {
	if p.tty == nil || p.closed {
		return
	}
	width := 80
	if w, _, err := term.GetSize(int(p.tty.Fd())); err == nil && w > 0 {
		width = w
	}
	// One column short of the width: a line that fills the terminal
	// exactly wraps on some terminals, and \r would then redraw below.
	line := ansi.Truncate(p.st.text(p.now()), width-1, "…")
	io.WriteString(p.w, "\r"+ansi.EraseEntireLine+line)
	p.drawn = true
}

// text is the status line: run, turn n/max, tokens used/limit, elapsed,
// what runs now, retries.
func (s status) text(now time.Time) string {
	parts := []string{"harness"}
	if s.runID != "" {
		parts[0] += " " + s.runID
	}
	turn := fmt.Sprintf("turn %d", s.turn)
	if s.maxTurns > 0 {
		turn += fmt.Sprintf("/%d", s.maxTurns)
	}
	tokens := fmt.Sprintf("%d", s.tokens)
	if s.maxTokens > 0 {
		tokens += fmt.Sprintf("/%d", s.maxTokens)
	}
	parts = append(parts, turn, tokens+" tokens", (now.Sub(s.started) / time.Second * time.Second).String())
	if s.activity != "" {
		parts = append(parts, s.activity)
	}
	if s.retries > 0 {
		parts = append(parts, fmt.Sprintf("%d retries", s.retries))
	}
	return printable(strings.Join(parts, " · "))
}

// printable shows a text on one line with its control characters
// escaped, so that it can never move the cursor or forge a line.
func printable(s string) string { return termsafe.Escape(s) }
