package main

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// crashPoint builds the observer that kills the harness process with
// SIGKILL right after a given journal event is durable, so a crash test
// stops exactly where it means to instead of wherever a signal lands:
//
//	seq:N     after the run's own event number N
//	TYPE      after the first event of TYPE (at any depth: children too)
//	TYPE#N    after the Nth event of TYPE
//
// Only the test binary reads HARNESS_TEST_CRASH_AFTER; harness itself has
// no such switch.
func crashPoint(spec string) func(line []byte, depth int) {
	if spec == "" {
		return nil
	}
	seen := 0
	return func(line []byte, depth int) {
		var ev struct {
			Seq  int64  `json:"seq"`
			Type string `json:"type"`
		}
		if json.Unmarshal(line, &ev) != nil {
			return
		}
		hit := false
		if n, ok := strings.CutPrefix(spec, "seq:"); ok {
			want, _ := strconv.ParseInt(n, 10, 64)
			hit = depth == 0 && ev.Seq == want
		} else {
			typ, nth, _ := strings.Cut(spec, "#")
			want := 1
			if nth != "" {
				want, _ = strconv.Atoi(nth)
			}
			if ev.Type == typ {
				seen++
				hit = seen == want
			}
		}
		if hit {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	}
}
