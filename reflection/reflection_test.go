package reflection

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/record"
)

// The transcript carries the task, the calls in order and the answer,
// never a secret the redactor knows, and stays within its bounds even
// when a call's arguments are huge or cut inside a character.
func TestTranscript(t *testing.T) {
	secret := "sk-live-0123456789abcdef"
	huge := strings.Repeat("é", maxArgument)
	s := &Source{Manifest: record.Manifest{Inputs: record.Inputs{Prompt: "Summarize notes.txt"}}, Messages: []loop.Message{
		{Role: loop.RoleSystem, Content: "system"},
		{Role: loop.RoleUser, Content: "Summarize notes.txt"},
		{Role: loop.RoleAssistant, ToolCalls: []loop.ToolCall{{Name: "read_file", Arguments: `{"path":"notes.txt","key":"` + secret + `"}`}, {Name: "write_file", Arguments: huge}}},
		{Role: loop.RoleTool, Content: "the notes, with " + secret},
		{Role: loop.RoleAssistant, Content: "Done: three points."},
	}}
	got := s.Transcript(artifacts.NewRedactor(secret))
	for _, want := range []string{"## Task\n\nSummarize notes.txt", "1. read_file {\"path\":\"notes.txt\"", "2. write_file ", "more bytes left out", "## Answer\n\nDone: three points."} {
		if !strings.Contains(got, want) {
			t.Errorf("transcript lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, secret) || strings.Contains(got, "the notes, with") {
		t.Errorf("the transcript carries a secret or a tool result:\n%s", got)
	}
	if !utf8.ValidString(got) {
		t.Error("the transcript was cut inside a character")
	}
}
