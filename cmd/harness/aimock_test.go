package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/testenv"
)

// aimockFixtures: the task asks for a file; once a tool result is in the
// conversation, the answer.
const aimockFixtures = `{"fixtures": [
  {"match": {"userMessage": "read a.txt", "hasToolResult": true}, "response": {"content": "a says hello"}},
  {"match": {"userMessage": "read a.txt"}, "response": {"toolCalls": [{"name": "read_file", "arguments": {"path": "a.txt"}}]}}
]}`

// TestAgainstAimock runs a tool-calling run against @copilotkit/aimock, a
// mock model server this project did not write, over both wire APIs,
// plain and streamed: its reading of the Responses API (the event
// sequence with in_progress, content parts and argument deltas, which
// harness's own scripted server leaves out) is not ours.
func TestAgainstAimock(t *testing.T) {
	cli, _ := filepath.Abs("../../.tools/npm/node_modules/@copilotkit/aimock/dist/cli.js")
	_, err := os.Stat(cli)
	testenv.Need(t, "aimock (npm @copilotkit/aimock)", err)
	_, err = exec.LookPath("node")
	testenv.Need(t, "node", err)

	dir := t.TempDir()
	testenv.WriteTree(t, dir, map[string]string{"fixtures/run.json": aimockFixtures, "ws/a.txt": "hello\n"})
	base := testenv.StartNode(t, "aimock", dir, func(port int) ([]string, []string) {
		return []string{cli, "-p", fmt.Sprint(port), "-f", filepath.Join(dir, "fixtures"), "--log-level", "warn", "--strict"}, nil
	})
	bin := harnessBin(t)
	for _, wire := range []string{"chat", "responses"} {
		for _, stream := range []bool{false, true} {
			id := fmt.Sprintf("%s-%v", wire, stream)
			t.Run(id, func(t *testing.T) {
				cmd := exec.Command(bin, "run", "--workspace", filepath.Join(dir, "ws"), "--model", "gpt-4.1", "--base-url", base+"/v1",
					"--prompt", "read a.txt", "--wire-api", wire, fmt.Sprintf("--stream=%v", stream),
					"--run-id", id, "--artifacts-dir", filepath.Join(dir, "runs"), "--max-retries", "0")
				cmd.Env = append(os.Environ(), "HARNESS_API_KEY=sk-third-party", "HARNESS_WIRE_API=")
				var so, se bytes.Buffer
				cmd.Stdout, cmd.Stderr = &so, &se
				if err := cmd.Run(); err != nil || strings.TrimSpace(so.String()) != "a says hello" {
					t.Fatalf("run over %s (stream %v): %v\nstdout %s\nstderr %s", wire, stream, err, so.String(), se.String())
				}
				res, _ := os.ReadFile(filepath.Join(dir, "runs", id, "result.json"))
				if !bytes.Contains(res, []byte(`"wireApi": "`+wire+`"`)) || !bytes.Contains(res, []byte(`"turns": 2`)) {
					t.Errorf("result.json:\n%s", res)
				}
			})
		}
	}
}
