package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDemoReplays replays the bundled example's cassettes, as the README's
// first command does: the one recorded over Chat Completions and the one
// recorded over the Responses API. It fails when a change to what harness
// sends the model (system prompt, tool schemas, skill framing) makes a
// recording stale: re-record with examples/demo/record.sh.
func TestDemoReplays(t *testing.T) {
	for _, tc := range []struct{ wire, cassette string }{{"chat", "cassette.jsonl"}, {"responses", "cassette.responses.jsonl"}} {
		t.Run(tc.wire, func(t *testing.T) { replayDemo(t, tc.wire, tc.cassette) })
	}
}

func replayDemo(t *testing.T, wire, cassette string) {
	demo, err := filepath.Abs("../../examples/demo")
	if err != nil {
		t.Fatal(err)
	}
	runs := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := Main([]string{"harness", "run", "--wire-api", wire,
		"--workspace", filepath.Join(demo, "workspace"),
		"--skills-root", filepath.Join(demo, "workspace", "skills"),
		"--skill", "release-notes",
		"--model", "gpt-4.1-mini",
		"--prompt-file", filepath.Join(demo, "prompt.txt"),
		"--replay", filepath.Join(demo, cassette),
		"--artifacts-dir", runs,
	}, strings.NewReader(""), &stdout, &stderr)
	if code != 0 {
		t.Fatalf("demo replay exited %d; stderr:\n%s\nThe cassette is stale if a request changed: run examples/demo/record.sh", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "## v1.4.0 (2026-11-20)") {
		t.Errorf("unexpected answer:\n%s", stdout.String())
	}
	entries, err := os.ReadDir(runs)
	if err != nil || len(entries) != 1 {
		t.Fatalf("want one run directory in %s, got %v (%v)", runs, entries, err)
	}
}

// TestDemoReflectionReplays replays the demo, then harness reflect on it
// from examples/demo/reflect.cassette.jsonl (recorded against the scripted
// server): the proposed skill waits in the store, its history naming the
// demo run.
func TestDemoReflectionReplays(t *testing.T) {
	demo, err := filepath.Abs("../../examples/demo")
	if err != nil {
		t.Fatal(err)
	}
	runs, st := t.TempDir(), filepath.Join(t.TempDir(), "store")
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"harness", "run", "--workspace", filepath.Join(demo, "workspace"), "--skills-root", filepath.Join(demo, "workspace", "skills"),
		"--skill", "release-notes", "--model", "gpt-4.1-mini", "--prompt-file", filepath.Join(demo, "prompt.txt"),
		"--replay", filepath.Join(demo, "cassette.jsonl"), "--artifacts-dir", runs, "--run-id", "demo"}, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("demo replay exited %d: %s", code, stderr.String())
	}
	stdout.Reset()
	stderr.Reset()
	if code := Main([]string{"harness", "reflect", filepath.Join(runs, "demo"), "--replay", filepath.Join(demo, "reflect.cassette.jsonl"),
		"--approve-created", "none", "--store", st, "--artifacts-dir", runs, "--run-id", "reflection"}, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("reflection replay exited %d:\n%s\nThe cassette is stale if a request changed: run examples/demo/record.sh", code, stderr.String())
	}
	stdout.Reset()
	if code := Main([]string{"harness", "skills", "pending", "--store", st}, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("skills pending exited %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "changelog-release-notes") || !strings.Contains(stdout.String(), "run reflection turn 1, learned from run demo") {
		t.Errorf("pending skills:\n%s", stdout.String())
	}
}
