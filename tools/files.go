package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/workspace"
)

// Bounds of the file tools. They keep one call from flooding the model's
// context or the disk.
const (
	defaultReadBytes = 64 << 10
	maxReadBytes     = 1 << 20
	maxWriteBytes    = 1 << 20
	maxListEntries   = 1000
	maxGlobDepth     = 8
	sniffBytes       = 8 << 10
)

// FileTools are read_file and list_files, and write_file when the operator
// allowed it. Every access goes through ws, which refuses the run
// directory on the opened descriptor.
func FileTools(ws *workspace.Workspace, allowWrite bool) []loop.Tool {
	tools := []loop.Tool{&ListFiles{ws}, &ReadFile{ws}}
	if allowWrite {
		tools = append(tools, &WriteFile{ws})
	}
	return tools
}

// ReadFile is read_file.
type ReadFile struct{ WS *workspace.Workspace }

func (t *ReadFile) Effect() loop.Effect { return loop.EffectRead }

func (t *ReadFile) Spec() loop.ToolSpec {
	return loop.ToolSpec{
		Name:        "read_file",
		Description: "Read a file in the workspace. Text files return their content (up to maxBytes, with truncated=true when cut); binary files return only size and digest. Paths are under /workspace or relative to the working directory.",
		Parameters: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["path"],"properties":{` +
			`"path":{"type":"string","description":"file path: /workspace/... or relative to the working directory"},` +
			`"maxBytes":{"type":"integer","description":"most bytes to return (default 65536, at most 1048576)"}}}`),
	}
}

func (t *ReadFile) Call(ctx context.Context, call loop.ToolCall, raw json.RawMessage) (loop.ToolResult, error) {
	var args struct {
		Path     string `json:"path"`
		MaxBytes *int   `json:"maxBytes"`
	}
	if err := json.Unmarshal(raw, &args); err != nil {
		return loop.ErrorResult("arguments_invalid", err.Error(), nil), nil
	}
	rec := map[string]any{"path": args.Path}
	limit := defaultReadBytes
	if args.MaxBytes != nil {
		if *args.MaxBytes < 1 || *args.MaxBytes > maxReadBytes {
			return loop.ErrorResult("max_bytes_invalid", fmt.Sprintf("maxBytes must be between 1 and %d", maxReadBytes), rec), nil
		}
		limit = *args.MaxBytes
	}
	ws := t.WS
	rel, err := ws.Resolve(args.Path)
	if err != nil {
		return refusePath(err, rec), nil
	}
	sp := ws.SandboxPath(rel)
	rec["path"] = sp
	f, err := ws.Open(rel)
	if err != nil {
		return refusePath(err, rec), nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return refusePath(err, rec), nil
	}
	if !fi.Mode().IsRegular() {
		what := "a directory: use list_files"
		if !fi.IsDir() {
			what = "not a regular file"
		}
		return refusePath(&workspace.Refusal{Code: "not_a_file", Msg: fmt.Sprintf("%s is %s", sp, what)}, rec), nil
	}
	// A file read whole needs no more room than its size (and a little,
	// should it have grown since the stat); a 64 KiB buffer for a short
	// file is most of a small read's cost.
	head := make([]byte, min(int64(max(limit, sniffBytes)), max(fi.Size(), 0)+512))
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return refusePath(err, rec), nil
	}
	head = head[:n]
	rec["size"] = fi.Size()
	sniff := head[:min(len(head), sniffBytes)]
	if isBinaryPrefix(sniff, fi.Size() > int64(len(sniff))) {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return refusePath(err, rec), nil
		}
		d, size, err := artifacts.DigestReader(f)
		if err != nil {
			return refusePath(err, rec), nil
		}
		rec["contentKind"], rec["digest"], rec["size"] = "binary", d, size
		return okResult(map[string]any{"path": sp, "contentKind": "binary", "size": size, "digest": d,
			"note": "binary file: content not shown"}, rec)
	}
	content := head[:min(len(head), limit)]
	truncated := fi.Size() > int64(len(content))
	if truncated {
		content = trimPartialRune(content)
	}
	rec["contentKind"], rec["truncated"], rec["returnedBytes"] = "text", truncated, len(content)
	return okResult(map[string]any{"path": sp, "contentKind": "text", "size": fi.Size(), "truncated": truncated, "content": string(content)}, rec)
}

// isBinaryPrefix is the content guess: a NUL byte or invalid UTF-8 in the
// first 8 KiB, ignoring a rune cut at the end of a prefix.
func isBinaryPrefix(b []byte, cut bool) bool {
	if slices.Contains(b, 0) {
		return true
	}
	if cut {
		b = trimPartialRune(b)
	}
	return !utf8.Valid(b)
}

// trimPartialRune drops a multi-byte rune cut off at the end of b.
func trimPartialRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			break
		}
	}
	return b
}

// ListFiles is list_files.
type ListFiles struct{ WS *workspace.Workspace }

func (t *ListFiles) Effect() loop.Effect { return loop.EffectRead }

func (t *ListFiles) Spec() loop.ToolSpec {
	return loop.ToolSpec{
		Name:        "list_files",
		Description: "List a directory of the workspace (default: the working directory), or the files under it matching a glob such as **/*.md. At most 1000 entries, sorted; truncated=true when there are more.",
		Parameters: json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{` +
			`"path":{"type":"string","description":"directory: /workspace/... or relative to the working directory"},` +
			`"glob":{"type":"string","description":"pattern relative to path; * and ? match within a name, ** matches any number of directories"}}}`),
	}
}

type listEntry struct {
	Path string `json:"path"`
	Type string `json:"type"` // file | dir | symlink | other
	Size int64  `json:"size,omitempty"`
}

func (t *ListFiles) Call(ctx context.Context, call loop.ToolCall, raw json.RawMessage) (loop.ToolResult, error) {
	var args struct {
		Path string `json:"path"`
		Glob string `json:"glob"`
	}
	if err := json.Unmarshal(raw, &args); err != nil {
		return loop.ErrorResult("arguments_invalid", err.Error(), nil), nil
	}
	ws := t.WS
	p := args.Path
	if p == "" {
		p = ws.SandboxPath(ws.Cwd)
	}
	rec := map[string]any{"path": p, "glob": args.Glob}
	rel, err := ws.Resolve(p)
	if err != nil {
		return refusePath(err, rec), nil
	}
	if args.Glob != "" {
		if _, err := path.Match(strings.ReplaceAll(args.Glob, "**", "*"), ""); err != nil {
			return loop.ErrorResult("glob_invalid", fmt.Sprintf("glob %q: %v", args.Glob, err), rec), nil
		}
	}
	var entries []listEntry
	truncated := false
	if args.Glob == "" {
		des, err := ws.ReadDir(rel)
		if err != nil {
			return refusePath(err, rec), nil
		}
		for _, de := range des {
			if len(entries) == maxListEntries {
				truncated = true
				break
			}
			entries = append(entries, entryOf(de, de.Name()))
		}
	} else {
		d, err := ws.OpenDir(rel)
		if err != nil {
			return refusePath(err, rec), nil
		}
		d.Close()
		err = ws.Walk(rel, func(sub string, de fs.DirEntry) error {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if de.IsDir() && strings.Count(sub, "/")+1 >= maxGlobDepth {
				return fs.SkipDir
			}
			if matchGlob(args.Glob, sub) {
				if len(entries) == maxListEntries {
					truncated = true
					return fs.SkipAll
				}
				entries = append(entries, entryOf(de, sub))
			}
			return nil
		})
		if err != nil {
			return loop.ToolResult{}, err
		}
	}
	slices.SortFunc(entries, func(a, b listEntry) int { return strings.Compare(a.Path, b.Path) })
	if entries == nil {
		entries = []listEntry{}
	}
	rec["entries"], rec["truncated"] = len(entries), truncated
	return okResult(map[string]any{"path": ws.SandboxPath(rel), "entries": entries, "truncated": truncated}, rec)
}

func entryOf(de fs.DirEntry, name string) listEntry {
	e := listEntry{Path: name, Type: "other"}
	switch {
	case de.Type()&fs.ModeSymlink != 0:
		e.Type = "symlink"
	case de.IsDir():
		e.Type = "dir"
	case de.Type().IsRegular():
		e.Type = "file"
		if fi, err := de.Info(); err == nil {
			e.Size = fi.Size()
		}
	}
	return e
}

// matchGlob matches a slash path against a pattern in which ** stands for
// any number of whole path segments and the rest is path.Match syntax.
func matchGlob(pattern, name string) bool {
	return matchSegments(strings.Split(pattern, "/"), strings.Split(name, "/"))
}

func matchSegments(pat, segs []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(segs); i++ {
				if matchSegments(pat[1:], segs[i:]) {
					return true
				}
			}
			return false
		}
		if len(segs) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], segs[0]); !ok {
			return false
		}
		pat, segs = pat[1:], segs[1:]
	}
	return len(segs) == 0
}

// WriteFile is write_file.
type WriteFile struct{ WS *workspace.Workspace }

func (t *WriteFile) Effect() loop.Effect { return loop.EffectWrite }

func (t *WriteFile) Spec() loop.ToolSpec {
	return loop.ToolSpec{
		Name:        "write_file",
		Description: "Create or replace a file in the workspace with the given text (at most 1 MiB). Parent directories are created. Paths are under /workspace or relative to the working directory.",
		Parameters: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["path","content"],"properties":{` +
			`"path":{"type":"string","description":"file path: /workspace/... or relative to the working directory"},` +
			`"content":{"type":"string","description":"the complete new content of the file"}}}`),
	}
}

func (t *WriteFile) Call(ctx context.Context, call loop.ToolCall, raw json.RawMessage) (loop.ToolResult, error) {
	var args struct {
		Path    string `json:"path"`
		Content string `json:"content"`
	}
	if err := json.Unmarshal(raw, &args); err != nil {
		return loop.ErrorResult("arguments_invalid", err.Error(), nil), nil
	}
	rec := map[string]any{"path": args.Path, "size": len(args.Content)}
	if len(args.Content) > maxWriteBytes {
		return loop.ErrorResult("content_too_large", fmt.Sprintf("content is %d bytes; at most %d bytes can be written in one call", len(args.Content), maxWriteBytes), rec), nil
	}
	ws := t.WS
	rel, err := ws.Resolve(args.Path)
	if err != nil {
		return refusePath(err, rec), nil
	}
	sp := ws.SandboxPath(rel)
	rec["path"] = sp
	if err := ws.WriteFile(rel, []byte(args.Content)); err != nil {
		return refusePath(err, rec), nil
	}
	d := artifacts.DigestString(args.Content)
	rec["digest"] = d
	return okResult(map[string]any{"path": sp, "size": len(args.Content), "digest": d}, rec)
}
