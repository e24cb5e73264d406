package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harness-dev/harness/loop/looptest"
)

// evalBench is a skill with one eval (a prompt and a check, no grader) and
// the same prompt as a batch of plain tasks, each side with cassettes for
// n runs with the skill preloaded and n without, recorded once against the
// scripted server and copied under every cell's and task's name: what is
// timed is harness, replaying.
type evalBench struct {
	dir          string
	evalReplay   string
	batchReplay  string
	batchFile    string
	cellsPerSide int
}

const evalBenchPrompt = "Shout the words of the greeting: hello there"

func newEvalBench(b *testing.B, n int) *evalBench {
	b.Helper()
	e := &evalBench{dir: b.TempDir(), cellsPerSide: n}
	write := func(rel, s string) {
		p := filepath.Join(e.dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	shout := "---\nname: shout\ndescription: Answers in capital letters. Use when asked to shout.\n---\nAnswer in capital letters only.\n"
	write("skills/shout/SKILL.md", shout)
	write("skills/shout/evals/evals.yaml", "skill_name: shout\nevals:\n  - id: 1\n    prompt: \""+evalBenchPrompt+"\"\n    checks:\n      - answer-contains: HELLO\n")
	write("batch-roots/with/shout/SKILL.md", shout)
	if err := os.MkdirAll(filepath.Join(e.dir, "batch-roots/without"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(e.dir, "ws"), 0o755); err != nil {
		b.Fatal(err)
	}
	// Each task as eval writes a cell: the prompt, the skill preloaded
	// from a root that holds only it, or a root with none.
	batch := func(path string, n int) {
		var tasks []string
		for i := 1; i <= n; i++ {
			tasks = append(tasks,
				fmt.Sprintf(`{"id": "w%d", "prompt": %q, "external-skills-root": ["batch-roots/with"], "skills": ["shout"]}`, i, evalBenchPrompt),
				fmt.Sprintf(`{"id": "o%d", "prompt": %q, "external-skills-root": ["batch-roots/without"]}`, i, evalBenchPrompt))
		}
		write(path, `{"version": 1, "defaults": {"workspace": "ws"}, "tasks": [`+strings.Join(tasks, ", ")+"]}\n")
	}
	batch("one.batch.json", 1)
	batch("bench.batch.json", n)
	e.batchFile = filepath.Join(e.dir, "bench.batch.json")

	b.Setenv("HARNESS_API_KEY", "bench")
	srv := looptest.New([]looptest.Reply{{Content: "HELLO THERE"}, {Content: "hello there"}, {Content: "HELLO THERE"}, {Content: "hello there"}})
	defer srv.Close()
	rec := filepath.Join(e.dir, "recorded")
	e.run(b, "eval", filepath.Join(e.dir, "skills/shout"), "--model", "bench", "--epochs", "1", "--base-url", srv.URL,
		"--record", filepath.Join(rec, "eval"), "--artifacts-dir", filepath.Join(e.dir, "recording"))
	e.run(b, "batch", "run", filepath.Join(e.dir, "one.batch.json"), "--model", "bench", "--jobs", "1", "--base-url", srv.URL,
		"--record", filepath.Join(rec, "batch"), "--artifacts-dir", filepath.Join(e.dir, "recording"))
	e.evalReplay, e.batchReplay = filepath.Join(e.dir, "replay", "eval"), filepath.Join(e.dir, "replay", "batch")
	for i := 1; i <= n; i++ {
		for from, to := range map[string]string{
			"eval/e1_with_skill_1": fmt.Sprintf("eval/e1_with_skill_%d", i), "eval/e1_without_skill_1": fmt.Sprintf("eval/e1_without_skill_%d", i),
			"batch/w1": fmt.Sprintf("batch/w%d", i), "batch/o1": fmt.Sprintf("batch/o%d", i),
		} {
			data, err := os.ReadFile(filepath.Join(rec, from+".jsonl"))
			if err != nil {
				b.Fatal(err)
			}
			write(filepath.Join("replay", to+".jsonl"), string(data))
		}
	}
	return e
}

func (e *evalBench) run(b *testing.B, args ...string) {
	b.Helper()
	var stdout, stderr bytes.Buffer
	if code := Main(append([]string{"harness"}, append(args, "--quiet")...), strings.NewReader(""), &stdout, &stderr); code != 0 {
		b.Fatalf("harness %s exited %d:\n%s\n%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
	}
}

// replayEval runs the eval's 2n cells from the cassettes, jobs at once,
// in a new artifacts directory.
func (e *evalBench) replayEval(b *testing.B, jobs int) {
	e.run(b, "eval", filepath.Join(e.dir, "skills/shout"), "--model", "bench", "--epochs", strconv.Itoa(e.cellsPerSide), "--jobs", strconv.Itoa(jobs),
		"--replay", e.evalReplay, "--artifacts-dir", b.TempDir())
}

// replayBatch runs the same 2n runs as plain batch tasks.
func (e *evalBench) replayBatch(b *testing.B, jobs int) {
	e.run(b, "batch", "run", e.batchFile, "--model", "bench", "--jobs", strconv.Itoa(jobs),
		"--replay", e.batchReplay, "--artifacts-dir", b.TempDir())
}

// BenchmarkEvalOverhead compares an eval cell (checks only, no grader)
// with the same prompt run as a plain batch task, both replayed, one at a
// time: each iteration runs the batch of 2×25 tasks and the eval of 2×25
// cells (in turn first), and reports the medians over the iterations of
// each one's wall time and CPU time (this process's, which runs both) per
// cell, and of their ratios (eval-x, target ≤ 1.2; eval-cpu-x).
func BenchmarkEvalOverhead(b *testing.B) {
	e := newEvalBench(b, 25)
	cells := float64(2 * e.cellsPerSide)
	var batchWall, evalWall, batchCPU, evalCPU, wallX, cpuX []float64
	// Each side runs under the profiler label side=batch or side=eval
	// (with -cpuprofile, `go tool pprof -tagfocus side=eval` shows one).
	measure := func(side string, f func()) (wall, cpu float64) {
		c, t := cpuTime(b), time.Now()
		pprof.Do(context.Background(), pprof.Labels("side", side), func(context.Context) { f() })
		return float64(time.Since(t).Microseconds()) / 1000 / cells, float64((cpuTime(b) - c).Microseconds()) / 1000 / cells
	}
	i := 0
	for b.Loop() {
		var bw, bc, ew, ec float64
		if i%2 == 0 {
			bw, bc = measure("batch", func() { e.replayBatch(b, 1) })
			ew, ec = measure("eval", func() { e.replayEval(b, 1) })
		} else {
			ew, ec = measure("eval", func() { e.replayEval(b, 1) })
			bw, bc = measure("batch", func() { e.replayBatch(b, 1) })
		}
		i++
		batchWall, evalWall, batchCPU, evalCPU = append(batchWall, bw), append(evalWall, ew), append(batchCPU, bc), append(evalCPU, ec)
		wallX, cpuX = append(wallX, ew/bw), append(cpuX, ec/bc)
	}
	b.ReportMetric(median(batchWall), "batch-ms/cell")
	b.ReportMetric(median(evalWall), "eval-ms/cell")
	b.ReportMetric(median(wallX), "eval-x")
	b.ReportMetric(median(batchCPU), "batch-cpu-ms/cell")
	b.ReportMetric(median(evalCPU), "eval-cpu-ms/cell")
	b.ReportMetric(median(cpuX), "eval-cpu-x")
}

// cpuTime is the CPU time this process has used, every thread's.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// BenchmarkEvalCellsPerMinute replays an eval of 2×50 cells (one model
// request each, a check) with --jobs N, and the example eval
// commit-message (examples/eval: 24 cells, a tool call in each eval cell,
// 12 graded by the grader model from its cassettes) with --jobs 2, and
// reports cells per minute (target 300 on 2 cores).
func BenchmarkEvalCellsPerMinute(b *testing.B) {
	e := newEvalBench(b, 50)
	for _, jobs := range []int{1, 2, 4, 8} {
		b.Run(fmt.Sprintf("jobs=%d", jobs), func(b *testing.B) {
			var total time.Duration
			for b.Loop() {
				t := time.Now()
				e.replayEval(b, jobs)
				total += time.Since(t)
			}
			b.ReportMetric(float64(2*e.cellsPerSide*b.N)/total.Minutes(), "cells/min")
		})
	}
	b.Run("example-jobs=2", func(b *testing.B) {
		ex, err := filepath.Abs("../../examples/eval")
		if err != nil {
			b.Fatal(err)
		}
		var total time.Duration
		for b.Loop() {
			t := time.Now()
			e.run(b, "eval", filepath.Join(ex, "skills/commit-message"), "--model", "scripted", "--grader-model", "scripted-grader", "--epochs", "3",
				"--jobs", "2", "--replay", filepath.Join(ex, "cassettes/commit-message"), "--artifacts-dir", b.TempDir())
			total += time.Since(t)
		}
		b.ReportMetric(float64(24*b.N)/total.Minutes(), "cells/min")
	})
}
