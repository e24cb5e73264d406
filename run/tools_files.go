package run

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/loop"
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

// fileToolSet holds the workspace root the file tools share.
type fileToolSet struct {
	root  *os.Root
	ws    *Workspace
	tools []loop.Tool
}

// fileTools opens the workspace and builds read_file and list_files, and
// write_file when the operator allowed it.
func fileTools(ws *Workspace, allowWrite bool) (*fileToolSet, error) {
	root, err := os.OpenRoot(ws.Host)
	if err != nil {
		return nil, err
	}
	ft := &fileToolSet{root: root, ws: ws}
	ft.tools = []loop.Tool{&listFilesTool{ft}, &readFileTool{ft}}
	if allowWrite {
		ft.tools = append(ft.tools, &writeFileTool{ft})
	}
	return ft, nil
}

func (ft *fileToolSet) Close() error { return ft.root.Close() }

// refuse turns a path problem into the result the model sees.
func refuse(err error, record map[string]any) loop.ToolResult {
	var pr *pathRefusal
	if !errors.As(err, &pr) {
		pr = &pathRefusal{"io_error", err.Error()}
	}
	record["code"] = pr.Code
	return loop.ErrorResult(pr.Code, pr.Msg, record)
}

func okResult(v map[string]any, record map[string]any) (loop.ToolResult, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return loop.ToolResult{}, err
	}
	return loop.ToolResult{Content: string(b), Status: loop.StatusOK, Record: record}, nil
}

type readFileTool struct{ ft *fileToolSet }

func (t *readFileTool) Effect() loop.Effect { return loop.EffectRead }

func (t *readFileTool) Spec() loop.ToolSpec {
	return loop.ToolSpec{
		Name:        "read_file",
		Description: "Read a file in the workspace. Text files return their content (up to maxBytes, with truncated=true when cut); binary files return only size and digest. Paths are under /workspace or relative to the working directory.",
		Parameters: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["path"],"properties":{` +
			`"path":{"type":"string","description":"file path: /workspace/... or relative to the working directory"},` +
			`"maxBytes":{"type":"integer","description":"most bytes to return (default 65536, at most 1048576)"}}}`),
	}
}

func (t *readFileTool) Call(ctx context.Context, call loop.ToolCall, raw json.RawMessage) (loop.ToolResult, error) {
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
	ws := t.ft.ws
	rel, err := ws.resolvePath(args.Path)
	if err == nil {
		err = ws.protectedReal(rel)
	}
	if err != nil {
		return refuse(err, rec), nil
	}
	sp := ws.sandboxPath(rel)
	rec["path"] = sp
	// O_NONBLOCK: opening a FIFO for reading would otherwise wait for a
	// writer forever; the mode check below then refuses it.
	f, err := t.ft.root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return refuse(ws.rootError(rel, err), rec), nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return refuse(ws.rootError(rel, err), rec), nil
	}
	if !fi.Mode().IsRegular() {
		what := "a directory: use list_files"
		if !fi.IsDir() {
			what = "not a regular file"
		}
		return refuse(&pathRefusal{"not_a_file", fmt.Sprintf("%s is %s", sp, what)}, rec), nil
	}
	head := make([]byte, max(limit, sniffBytes))
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return refuse(ws.rootError(rel, err), rec), nil
	}
	head = head[:n]
	rec["size"] = fi.Size()
	sniff := head[:min(len(head), sniffBytes)]
	if isBinaryPrefix(sniff, fi.Size() > int64(len(sniff))) {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return refuse(ws.rootError(rel, err), rec), nil
		}
		d, size, err := artifacts.DigestReader(f)
		if err != nil {
			return refuse(ws.rootError(rel, err), rec), nil
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

type listFilesTool struct{ ft *fileToolSet }

func (t *listFilesTool) Effect() loop.Effect { return loop.EffectRead }

func (t *listFilesTool) Spec() loop.ToolSpec {
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

func (t *listFilesTool) Call(ctx context.Context, call loop.ToolCall, raw json.RawMessage) (loop.ToolResult, error) {
	var args struct {
		Path string `json:"path"`
		Glob string `json:"glob"`
	}
	if err := json.Unmarshal(raw, &args); err != nil {
		return loop.ErrorResult("arguments_invalid", err.Error(), nil), nil
	}
	ws := t.ft.ws
	p := args.Path
	if p == "" {
		p = ws.sandboxPath(ws.Cwd)
	}
	rec := map[string]any{"path": p, "glob": args.Glob}
	rel, err := ws.resolvePath(p)
	if err == nil {
		err = ws.protectedReal(rel)
	}
	if err != nil {
		return refuse(err, rec), nil
	}
	if args.Glob != "" {
		if _, err := path.Match(strings.ReplaceAll(args.Glob, "**", "*"), ""); err != nil {
			return loop.ErrorResult("glob_invalid", fmt.Sprintf("glob %q: %v", args.Glob, err), rec), nil
		}
	}
	fi, err := t.ft.root.Stat(rel)
	if err != nil {
		return refuse(ws.rootError(rel, err), rec), nil
	}
	if !fi.IsDir() {
		return refuse(&pathRefusal{"not_a_directory", fmt.Sprintf("%s is not a directory: use read_file", ws.sandboxPath(rel))}, rec), nil
	}
	var entries []listEntry
	truncated := false
	fsys := t.ft.root.FS()
	if args.Glob == "" {
		des, err := fs.ReadDir(fsys, rel)
		if err != nil {
			return refuse(ws.rootError(rel, err), rec), nil
		}
		for _, de := range des {
			child := path.Join(rel, de.Name())
			if ws.protected(child) {
				continue
			}
			if len(entries) == maxListEntries {
				truncated = true
				break
			}
			entries = append(entries, entryOf(de, de.Name()))
		}
	} else {
		err := fs.WalkDir(fsys, rel, func(p string, de fs.DirEntry, err error) error {
			if err != nil {
				return nil // unreadable corners are skipped, not fatal
			}
			if p == rel {
				return nil
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			sub := strings.TrimPrefix(p, rel+"/")
			if rel == "." {
				sub = p
			}
			if ws.protected(p) {
				if de.IsDir() {
					return fs.SkipDir
				}
				return nil
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
	return okResult(map[string]any{"path": ws.sandboxPath(rel), "entries": entries, "truncated": truncated}, rec)
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

type writeFileTool struct{ ft *fileToolSet }

func (t *writeFileTool) Effect() loop.Effect { return loop.EffectWrite }

func (t *writeFileTool) Spec() loop.ToolSpec {
	return loop.ToolSpec{
		Name:        "write_file",
		Description: "Create or replace a file in the workspace with the given text (at most 1 MiB). Parent directories are created. Paths are under /workspace or relative to the working directory.",
		Parameters: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["path","content"],"properties":{` +
			`"path":{"type":"string","description":"file path: /workspace/... or relative to the working directory"},` +
			`"content":{"type":"string","description":"the complete new content of the file"}}}`),
	}
}

func (t *writeFileTool) Call(ctx context.Context, call loop.ToolCall, raw json.RawMessage) (loop.ToolResult, error) {
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
	ws := t.ft.ws
	rel, err := ws.resolvePath(args.Path)
	if err == nil && rel == "." {
		err = &pathRefusal{"not_a_file", "the workspace root is a directory, not a file"}
	}
	if err == nil {
		err = ws.protectedReal(rel)
	}
	if err == nil {
		err = ws.protectedReal(path.Dir(rel))
	}
	if err != nil {
		return refuse(err, rec), nil
	}
	sp := ws.sandboxPath(rel)
	rec["path"] = sp
	root := t.ft.root
	if fi, err := root.Lstat(rel); err == nil && !fi.Mode().IsRegular() {
		return refuse(&pathRefusal{"not_a_file", fmt.Sprintf("%s exists and is not a regular file; write_file replaces regular files only", sp)}, rec), nil
	}
	if dir := path.Dir(rel); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return refuse(ws.rootError(dir, err), rec), nil
		}
	}
	// Write beside the target and rename over it, so a reader never sees
	// half a file and a crash leaves the old content.
	var suffix [6]byte
	rand.Read(suffix[:])
	tmp := path.Join(path.Dir(rel), "."+path.Base(rel)+".harness-"+hex.EncodeToString(suffix[:]))
	f, err := root.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return refuse(ws.rootError(rel, err), rec), nil
	}
	_, werr := f.Write([]byte(args.Content))
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = root.Rename(tmp, rel)
	}
	if werr != nil {
		root.Remove(tmp)
		return refuse(ws.rootError(rel, werr), rec), nil
	}
	d := artifacts.DigestString(args.Content)
	rec["digest"] = d
	return okResult(map[string]any{"path": sp, "size": len(args.Content), "digest": d}, rec)
}
