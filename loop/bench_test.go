package loop_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/loop/looptest"
)

// BenchmarkRunReplay measures the loop's own cost per turn: replaying a
// 200-turn cassette with one tool call per turn, journal fsyncs and tool
// output files included.
func BenchmarkRunReplay(b *testing.B) {
	const turns = 200
	var replies []looptest.Reply
	for i := range turns {
		replies = append(replies, looptest.Reply{ToolCalls: []looptest.Call{{ID: fmt.Sprintf("c%d", i), Name: "echo", Arguments: `{"text":"x"}`}}})
	}
	replies = append(replies, looptest.Reply{Content: "done"})
	srv := looptest.New(replies)
	path := filepath.Join(b.TempDir(), "c.jsonl")
	rec, err := loop.NewRecorder(loop.NewOpenAI(loop.OpenAIConfig{BaseURL: srv.URL, APIKey: "k"}), path, nil)
	if err != nil {
		b.Fatal(err)
	}
	history := []loop.Message{{Role: loop.RoleUser, Content: "go"}}
	if out := loop.Run(context.Background(), loop.Config{Model: rec, ModelName: "m", Tools: []loop.Tool{&echoTool{}}}, history); out.Reason != loop.ReasonCompleted {
		b.Fatal(out.Reason, out.Err)
	}
	rec.Close()
	srv.Close()
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		c, err := loop.OpenCassette(path)
		if err != nil {
			b.Fatal(err)
		}
		dir := b.TempDir()
		j, err := artifacts.OpenJournal(filepath.Join(dir, "journal.jsonl"), 1)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		out := loop.Run(context.Background(), loop.Config{Model: c, ModelName: "m", Tools: []loop.Tool{&echoTool{}}, Journal: j, ToolOutputDir: filepath.Join(dir, "tool-outputs")}, history)
		b.StopTimer()
		j.Close()
		if out.Reason != loop.ReasonCompleted {
			b.Fatal(out.Reason, out.Err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*(turns+1)), "µs/turn")
}
