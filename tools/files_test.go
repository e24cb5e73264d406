package tools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/harness-dev/harness/internal/testenv"
	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/workspace"
)

// fileFixture is a workspace with a protected run directory, a symlink
// out of it and one back into the protected area.
func fileFixture(t *testing.T) (*workspace.Workspace, map[string]loop.Tool) {
	t.Helper()
	base := t.TempDir()
	host := filepath.Join(base, "ws")
	outside := filepath.Join(base, "outside")
	testenv.WriteTree(t, host, map[string]string{
		"a.txt":                     "hello\n",
		"sub/b.md":                  "# b\n",
		"sub/deep/c.md":             "c\n",
		"big.txt":                   strings.Repeat("x", 100<<10),
		"bin.dat":                   "\x00\x01\x02binary",
		"utf8.txt":                  "héllo wörld",
		".harness/runs/r1/run.json": `{"secret":"run record"}`,
	})
	testenv.WriteTree(t, outside, map[string]string{"secret.txt": "outside\n"})
	testenv.Must(t, os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(host, "escape.txt")))
	testenv.Must(t, os.Symlink(outside, filepath.Join(host, "escape-dir")))
	testenv.Must(t, os.Symlink(filepath.Join(host, ".harness"), filepath.Join(host, "runs-link")))
	testenv.Must(t, syscall.Mkfifo(filepath.Join(host, "fifo"), 0o644))
	real, err := filepath.EvalSymlinks(host)
	testenv.Must(t, err)
	ws, err := workspace.Open(real, workspace.DefaultSandbox, "sub", []string{filepath.Join(real, ".harness/runs")})
	testenv.Must(t, err)
	t.Cleanup(func() { ws.Close() })
	tools := map[string]loop.Tool{}
	for _, tl := range FileTools(ws, true) {
		tools[tl.Spec().Name] = tl
	}
	return ws, tools
}

func call(t *testing.T, tool loop.Tool, args string) (loop.ToolResult, map[string]any) {
	t.Helper()
	res, err := tool.Call(context.Background(), loop.ToolCall{ID: "c", Name: tool.Spec().Name, Arguments: args}, json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s(%s): harness fault: %v", tool.Spec().Name, args, err)
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(res.Content), &out); err != nil {
		t.Fatalf("%s(%s): content is not JSON: %q", tool.Spec().Name, args, res.Content)
	}
	return res, out
}

func errorCodeOf(out map[string]any) string {
	e, _ := out["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func TestReadFile(t *testing.T) {
	_, tools := fileFixture(t)
	read := tools["read_file"]
	tests := []struct {
		name, args string
		code       string // "" = success
		check      func(t *testing.T, out map[string]any)
	}{
		{"relative to cwd", `{"path":"b.md"}`, "", func(t *testing.T, out map[string]any) {
			if out["content"] != "# b\n" || out["path"] != "/workspace/sub/b.md" {
				t.Errorf("got %v", out)
			}
		}},
		{"sandbox absolute", `{"path":"/workspace/a.txt"}`, "", func(t *testing.T, out map[string]any) {
			if out["content"] != "hello\n" {
				t.Errorf("got %v", out)
			}
		}},
		{"truncated at maxBytes", `{"path":"/workspace/big.txt","maxBytes":10}`, "", func(t *testing.T, out map[string]any) {
			if out["content"] != "xxxxxxxxxx" || out["truncated"] != true || out["size"] != float64(100<<10) {
				t.Errorf("got truncated=%v size=%v len=%d", out["truncated"], out["size"], len(out["content"].(string)))
			}
		}},
		{"default bound", `{"path":"/workspace/big.txt"}`, "", func(t *testing.T, out map[string]any) {
			if len(out["content"].(string)) != defaultReadBytes || out["truncated"] != true {
				t.Errorf("len=%d truncated=%v", len(out["content"].(string)), out["truncated"])
			}
		}},
		{"cut inside a rune keeps valid text", `{"path":"/workspace/utf8.txt","maxBytes":2}`, "", func(t *testing.T, out map[string]any) {
			if out["content"] != "h" {
				t.Errorf("content = %q, want %q", out["content"], "h")
			}
		}},
		{"binary gives metadata only", `{"path":"/workspace/bin.dat"}`, "", func(t *testing.T, out map[string]any) {
			if out["contentKind"] != "binary" || out["content"] != nil || !strings.HasPrefix(out["digest"].(string), "blake3:") {
				t.Errorf("got %v", out)
			}
		}},
		{"host absolute path", `{"path":"/etc/passwd"}`, "path_outside_workspace", nil},
		{"dot-dot escape", `{"path":"../../etc/passwd"}`, "path_outside_workspace", nil},
		{"sandbox dot-dot escape", `{"path":"/workspace/../etc/passwd"}`, "path_outside_workspace", nil},
		{"symlinked file escape", `{"path":"/workspace/escape.txt"}`, "path_outside_workspace", nil},
		{"symlinked dir escape", `{"path":"/workspace/escape-dir/secret.txt"}`, "path_outside_workspace", nil},
		{"protected run directory", `{"path":"/workspace/.harness/runs/r1/run.json"}`, "path_protected", nil},
		{"protected through a symlink", `{"path":"/workspace/runs-link/runs/r1/run.json"}`, "path_protected", nil},
		{"directory", `{"path":"/workspace/sub"}`, "not_a_file", nil},
		{"fifo is never opened", `{"path":"/workspace/fifo"}`, "not_a_file", nil},
		{"missing", `{"path":"nope.txt"}`, "file_not_found", nil},
		{"empty path", `{"path":""}`, "path_invalid", nil},
		{"NUL byte", `{"path":"a\u0000b"}`, "path_invalid", nil},
		{"maxBytes zero", `{"path":"b.md","maxBytes":0}`, "max_bytes_invalid", nil},
		{"maxBytes too large", `{"path":"b.md","maxBytes":2000000}`, "max_bytes_invalid", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, out := call(t, read, tc.args)
			if got := errorCodeOf(out); got != tc.code {
				t.Fatalf("code = %q, want %q (content %s)", got, tc.code, res.Content)
			}
			if tc.code != "" && res.Status != loop.StatusError {
				t.Errorf("status = %q, want error", res.Status)
			}
			if tc.check != nil {
				tc.check(t, out)
			}
			if strings.Contains(res.Content, "/tmp/") {
				t.Errorf("a host path leaked to the model: %s", res.Content)
			}
		})
	}
}

func TestListFiles(t *testing.T) {
	_, tools := fileFixture(t)
	list := tools["list_files"]
	names := func(out map[string]any) []string {
		var ns []string
		for _, e := range out["entries"].([]any) {
			ns = append(ns, e.(map[string]any)["path"].(string))
		}
		return ns
	}
	_, out := call(t, list, `{}`)
	if got := strings.Join(names(out), ","); got != "b.md,deep" {
		t.Errorf("cwd listing = %s", got)
	}
	_, out = call(t, list, `{"path":"/workspace"}`)
	got := strings.Join(names(out), ",")
	if strings.Contains(got, ".harness/runs") {
		t.Errorf("listing shows the protected directory: %s", got)
	}
	_, out = call(t, list, `{"path":"/workspace","glob":"**/*.md"}`)
	if got := strings.Join(names(out), ","); got != "sub/b.md,sub/deep/c.md" {
		t.Errorf("glob = %s", got)
	}
	_, out = call(t, list, `{"path":"/workspace","glob":"**/run.json"}`)
	if n := len(names(out)); n != 0 {
		t.Errorf("glob found %d files in the protected directory", n)
	}
	for args, code := range map[string]string{
		`{"path":"/workspace/a.txt"}`:         "not_a_directory",
		`{"path":"/workspace/.harness/runs"}`: "path_protected",
		`{"path":"/workspace/escape-dir"}`:    "path_outside_workspace",
		`{"path":"/", "glob":"*"}`:            "path_outside_workspace",
		`{"glob":"[" }`:                       "glob_invalid",
	} {
		if _, out := call(t, list, args); errorCodeOf(out) != code {
			t.Errorf("list_files %s: code %q, want %q", args, errorCodeOf(out), code)
		}
	}
}

func TestWriteFile(t *testing.T) {
	ws, tools := fileFixture(t)
	write := tools["write_file"]
	_, out := call(t, write, `{"path":"new/dir/out.txt","content":"written"}`)
	if errorCodeOf(out) != "" {
		t.Fatalf("write failed: %v", out)
	}
	b, err := os.ReadFile(filepath.Join(ws.Host, "sub/new/dir/out.txt"))
	if err != nil || string(b) != "written" {
		t.Fatalf("file = %q, %v", b, err)
	}
	entries, _ := os.ReadDir(filepath.Join(ws.Host, "sub/new/dir"))
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
	for args, code := range map[string]string{
		`{"path":"/workspace/.harness/runs/r1/run.json","content":"x"}`: "path_protected",
		`{"path":"/workspace/runs-link/runs/x.json","content":"x"}`:     "path_protected",
		`{"path":"/workspace/escape.txt","content":"x"}`:                "path_outside_workspace",
		`{"path":"/workspace/escape-dir/new.txt","content":"x"}`:        "path_outside_workspace",
		`{"path":"/workspace","content":"x"}`:                           "not_a_file",
		`{"path":"/workspace/sub","content":"x"}`:                       "not_a_file",
	} {
		if _, out := call(t, write, args); errorCodeOf(out) != code {
			t.Errorf("write_file %s: code %q, want %q", args, errorCodeOf(out), code)
		}
	}
	big, _ := json.Marshal(map[string]string{"path": "big.txt", "content": strings.Repeat("y", maxWriteBytes+1)})
	if _, out := call(t, write, string(big)); errorCodeOf(out) != "content_too_large" {
		t.Errorf("oversized write: %v", errorCodeOf(out))
	}
	if b, _ := os.ReadFile(filepath.Join(filepath.Dir(ws.Host), "outside/secret.txt")); string(b) != "outside\n" {
		t.Errorf("a file outside the workspace changed: %q", b)
	}
}

func TestWriteFileNeedsPermission(t *testing.T) {
	ws, err := workspace.Open(t.TempDir(), workspace.DefaultSandbox, ".", nil)
	testenv.Must(t, err)
	defer ws.Close()
	for _, tl := range FileTools(ws, false) {
		if tl.Spec().Name == "write_file" {
			t.Fatal("write_file offered without --allow-tool write_file")
		}
		if tl.Effect() != loop.EffectRead {
			t.Errorf("%s has effect %s, want read", tl.Spec().Name, tl.Effect())
		}
	}
}

func TestMatchGlob(t *testing.T) {
	for _, tc := range []struct {
		pat, name string
		want      bool
	}{
		{"*.md", "a.md", true},
		{"*.md", "d/a.md", false},
		{"**/*.md", "a.md", true},
		{"**/*.md", "d/e/a.md", true},
		{"d/**", "d/e/f", true},
		{"d/**/f", "d/f", true},
		{"d/?", "d/ab", false},
	} {
		if got := matchGlob(tc.pat, tc.name); got != tc.want {
			t.Errorf("matchGlob(%q, %q) = %v, want %v", tc.pat, tc.name, got, tc.want)
		}
	}
}

// TestWriteFileReplacesAtomically pins the write layer itself: the file is
// replaced by a rename (a second hard link keeps the old bytes, which an
// in-place write would have changed), a final symbolic link is never
// followed, and no temporary file is left behind.
func TestWriteFileReplacesAtomically(t *testing.T) {
	ws, tools := fileFixture(t)
	write := tools["write_file"]
	testenv.Must(t, os.Link(filepath.Join(ws.Host, "a.txt"), filepath.Join(ws.Host, "a-link.txt")))
	if _, out := call(t, write, `{"path":"/workspace/a.txt","content":"new"}`); errorCodeOf(out) != "" {
		t.Fatalf("write: %v", out)
	}
	if b, _ := os.ReadFile(filepath.Join(ws.Host, "a.txt")); string(b) != "new" {
		t.Errorf("a.txt = %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(ws.Host, "a-link.txt")); string(b) != "hello\n" {
		t.Errorf("the other link changed to %q: the file was written in place, not replaced", b)
	}
	testenv.Must(t, os.Symlink("a-link.txt", filepath.Join(ws.Host, "inner-link.txt")))
	if _, out := call(t, write, `{"path":"/workspace/inner-link.txt","content":"x"}`); errorCodeOf(out) != "not_a_file" {
		t.Errorf("a write through a link inside the workspace: %v", out)
	}
	if b, _ := os.ReadFile(filepath.Join(ws.Host, "a-link.txt")); string(b) != "hello\n" {
		t.Errorf("the link's target changed to %q", b)
	}
	entries, _ := os.ReadDir(ws.Host)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".harness-") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}
