package skills

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A SKILL.md that is not a regular file makes no skill, and the warning
// says so rather than asking for a rename to the name it has.
func TestSkillMDThatIsNotAFile(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "piped")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "SKILL.md"), 0o644); err != nil {
		t.Fatal(err)
	}
	reg, err := Scan(context.Background(), ScanOptions{Roots: []string{root}})
	if err != nil {
		t.Fatal(err)
	}
	var said string
	for _, d := range reg.Diagnostics {
		said += d.Detail + "\n"
	}
	if !strings.Contains(said, "its SKILL.md is not a regular file (a FIFO)") || strings.Contains(said, "rename it to SKILL.md") {
		t.Fatalf("diagnostics:\n%s", said)
	}
}
