package grant

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/harness-dev/harness/scripts"
)

// A hard link that already sits in a write or read path to a file outside
// it is the same file: a write through it changes the file outside, a read
// shows it, whatever the sandbox shows. A grant holding one is refused
// before the call.
func TestForRefusesHardLinksInDeclaredPaths(t *testing.T) {
	for _, c := range []struct {
		name  string
		write []any
		read  []any
		link  string // a second name made for docs/secret.txt ("": none)
		code  string
	}{
		{name: "hard link in the write path", write: []any{"out"}, link: "out/secret.txt", code: "write_path_hardlink"},
		{name: "hard link deeper down", write: []any{"out"}, link: "out/a/b/c.txt", code: "write_path_hardlink"},
		{name: "hard link outside the write path", write: []any{"out"}, link: "docs/copy.txt"},
		{name: "no hard link", write: []any{"out"}},
		{name: "hard link in a read path", write: []any{"out"}, read: []any{"pub"}, link: "pub/h", code: "read_path_hardlink"},
		{name: "hard link deep in a read path", read: []any{"pub"}, link: "pub/a/b/h", code: "read_path_hardlink"},
		{name: "read path that is a hard link", read: []any{"pub/h"}, link: "pub/h", code: "read_path_hardlink"},
		{name: "hard link beside a read path", read: []any{"pub/a"}, link: "pub/h"},
		{name: "read path that does not exist", read: []any{"nowhere"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ws := fixture(t)
			secret := filepath.Join(ws.Host, "docs", "secret.txt")
			if err := os.WriteFile(secret, []byte("s"), 0o644); err != nil {
				t.Fatal(err)
			}
			os.MkdirAll(filepath.Join(ws.Host, "out", "plain"), 0o755)
			os.WriteFile(filepath.Join(ws.Host, "out", "plain", "f.txt"), []byte("f"), 0o644)
			if c.link != "" {
				p := filepath.Join(ws.Host, filepath.FromSlash(c.link))
				os.MkdirAll(filepath.Dir(p), 0o755)
				if err := os.Link(secret, p); err != nil {
					t.Fatal(err)
				}
			}
			os.MkdirAll(filepath.Join(ws.Host, "pub", "a"), 0o755)
			fsm := map[string]any{}
			if c.write != nil {
				fsm["write"] = c.write
			}
			if c.read != nil {
				fsm["read"] = c.read
			}
			_, err := For(Request{Skill: skill(map[string]any{"filesystem": fsm}), Workspace: ws, Backend: scripts.BackendBwrap})
			var ref *Refusal
			switch {
			case c.code == "" && err != nil:
				t.Fatalf("For: %v", err)
			case c.code != "" && (!errors.As(err, &ref) || ref.Code != c.code):
				t.Fatalf("For: %v, want refusal %s", err, c.code)
			}
		})
	}
}

// The walk is bounded: a write path with more entries than it looks at
// is refused, not let through unchecked.
func TestForRefusesWritePathsTooLargeToCheck(t *testing.T) {
	ws := fixture(t)
	dir := filepath.Join(ws.Host, "out")
	os.MkdirAll(dir, 0o755)
	for i := range 5 {
		os.WriteFile(filepath.Join(dir, fmt.Sprint(i)), nil, 0o644)
	}
	defer func(n int) { maxWriteEntries = n }(maxWriteEntries)
	maxWriteEntries = 4
	_, err := For(Request{Skill: skill(map[string]any{"filesystem": map[string]any{"write": []any{"out"}}}), Workspace: ws, Backend: scripts.BackendBwrap})
	var ref *Refusal
	if !errors.As(err, &ref) || ref.Code != "write_path_too_large" {
		t.Fatalf("For: %v, want write_path_too_large", err)
	}
	// Read paths count against the same bound.
	_, err = For(Request{Skill: skill(map[string]any{"filesystem": map[string]any{"read": []any{"out"}}}), Workspace: ws, Backend: scripts.BackendBwrap})
	if !errors.As(err, &ref) || ref.Code != "read_path_too_large" {
		t.Fatalf("For: %v, want read_path_too_large", err)
	}
	maxWriteEntries = 5
	if _, err := For(Request{Skill: skill(map[string]any{"filesystem": map[string]any{"write": []any{"out"}}}), Workspace: ws, Backend: scripts.BackendBwrap}); err != nil {
		t.Fatalf("For with the bound at the count: %v", err)
	}
}
