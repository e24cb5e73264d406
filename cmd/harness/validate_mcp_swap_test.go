package main

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/harness-dev/harness/skills"
)

// skills validate reads a skill's mcp.json again, by path, after the scan
// listed it as a regular file: os.ReadFile follows whatever is at that
// path by then. Whoever owns the skill's directory (a shared checkout, a
// directory another user can write) swaps the file for a FIFO (validate
// never ends) or a link to /dev/zero (it reads until memory runs out).
// The read must be beneath the skill, bounded and judged by the
// descriptor it opened, as the scan's own reads are.
func TestValidateReadsMCPConfigByDescriptorNotPath(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "x")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: x\ndescription: X. Use for x.\n---\nx\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mcpFile := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(mcpFile, []byte(`{"mcpServers": {"s": {"command": "python3", "args": ["s.py"]}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	// The swap, between the scan and the check.
	check := func(s *skills.Skill) []skills.Diagnostic {
		if err := os.Remove(mcpFile); err != nil {
			t.Error(err)
		}
		if err := syscall.Mkfifo(mcpFile, 0o644); err != nil {
			t.Error(err)
		}
		return checkSkill(s)
	}
	done := make(chan error, 1)
	go func() {
		_, err := skills.Validate(context.Background(), dir, skills.ValidateOptions{Check: check})
		done <- err
	}()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		// Let the blocked open go before the test ends.
		if f, err := os.OpenFile(mcpFile, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		t.Fatal("skills validate waited 3 s on a FIFO put where the scan had seen mcp.json")
	}
}
