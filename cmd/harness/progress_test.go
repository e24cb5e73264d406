package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/harness-dev/harness/internal/testenv"
	"github.com/harness-dev/harness/loop/looptest"
)

func TestStatusText(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := start.Add(12*time.Second + 400*time.Millisecond)
	for _, tc := range []struct {
		st   status
		want string
	}{
		{status{started: start}, "harness · turn 0 · 0 tokens · 12s"},
		{status{runID: "r1", started: start, turn: 3, maxTurns: 50, tokens: 1234, maxTokens: 100000, activity: "running read_file", retries: 2},
			"harness r1 · turn 3/50 · 1234/100000 tokens · 12s · running read_file · 2 retries"},
		{status{runID: "r\x1b[2J", started: start, activity: "running a\rb"}, `harness r\x1b[2J · turn 0 · 0 tokens · 12s · running a\rb`},
	} {
		if got := tc.st.text(now); got != tc.want {
			t.Errorf("text = %q\nwant   %q", got, tc.want)
		}
	}
}

func TestPlainProgressHasNoControlCharacters(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, false)
	p.update(func(s *status) { s.turn = 4 })
	p.linef("harness: turn %d: %s", 1, "evil\x1b]0;title\x07\r\nharness: forged line")
	p.Close()
	got := b.String()
	if got != `harness: turn 1: evil\x1b]0;title\x07\r\nharness: forged line`+"\n" {
		t.Errorf("plain progress = %q", got)
	}
	var q bytes.Buffer
	p = newProgress(&q, true)
	p.linef("anything")
	fmt.Fprintln(p, "a line from the run")
	p.Close()
	if q.Len() != 0 {
		t.Errorf("--quiet printed %q", q.String())
	}
}

// openPTY gives a real pseudo-terminal: the terminal side is what harness
// writes to, the other side is what a person would see.
func openPTY(t *testing.T) (tty, screen *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	testenv.Need(t, "/dev/ptmx (pseudo-terminals)", err)
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetWinsize(int(s.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 60}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); m.Close() })
	return s, m
}

// TestLiveStatusLineOnATerminal runs harness with stderr on a real
// pseudo-terminal: the status line is drawn in place (carriage return and
// erase-line), cut to the terminal's width, shows the turn against the
// limit and the tool running, and is gone before the last lines.
func TestLiveStatusLineOnATerminal(t *testing.T) {
	tty, screen := openPTY(t)
	t.Setenv("TERM", "xterm")
	seen := make(chan string)
	go func() {
		var b bytes.Buffer
		io.Copy(&b, screen) // ends with EIO once both ends are closed
		seen <- b.String()
	}()
	dir := t.TempDir()
	testenv.WriteTree(t, dir, map[string]string{"ws/a.txt": "hello"})
	srv := looptest.New([]looptest.Reply{
		{ToolCalls: []looptest.Call{{ID: "c1", Name: "read_file", Arguments: `{"path": "a.txt"}`}}},
		{Content: "a says hello"},
	})
	t.Cleanup(srv.Close)
	t.Setenv("HARNESS_API_KEY", "sk-test")
	var stdout bytes.Buffer
	code := Main([]string{"harness", "run", "--workspace", filepath.Join(dir, "ws"), "--model", "m", "--base-url", srv.URL,
		"--prompt", "read a.txt", "--max-turns", "7", "--run-id", "r1",
		"--artifacts-dir", filepath.Join(dir, "runs")}, strings.NewReader(""), &stdout, tty)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	tty.Close()
	var out string
	select {
	case out = <-seen:
	case <-time.After(10 * time.Second):
		t.Fatal("the terminal never closed")
	}
	for _, want := range []string{"\r\x1b[2Kharness r1 · turn 1/7 · 0 tokens", "\r\x1b[2Kharness r1 · turn 2/7 · 15 tokens"} {
		if !strings.Contains(out, want) {
			t.Errorf("no status line %q drawn in place:\n%q", want, out)
		}
	}
	// Every drawn status line fits in 59 columns; the longest are cut.
	cut := false
	for _, frame := range strings.Split(out, "\r\x1b[2K") {
		line, _, _ := strings.Cut(frame, "\r\n")
		if n := len([]rune(line)); n > 59 {
			t.Errorf("a status line of %d columns on a 60-column terminal: %q", n, line)
		}
		cut = cut || strings.HasSuffix(line, "…")
	}
	if !cut {
		t.Errorf("no status line was cut to the width:\n%q", out)
	}
	if !strings.Contains(out, "harness: turn 1: read_file\r\n") {
		t.Errorf("the tool line is not a lasting line:\n%q", out)
	}
	// The last thing before the closing lines is the erased status line.
	if !strings.Contains(out, "\r\x1b[2Kharness: run r1 succeeded (exit 0)") {
		t.Errorf("the status line was not removed before the result:\n%q", out)
	}
}
