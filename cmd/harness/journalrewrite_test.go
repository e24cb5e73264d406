package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/harness-dev/harness/artifacts"
)

// cmdJournalRewrite edits an unsealed run directory the way someone who
// can write it could: it replaces OLD with NEW in the journal lines of
// event TYPE, chains every line again and points run.json at the new
// head, so that the directory still verifies and only harness's own
// checks of what the journal says stand in the way:
//
//	journal-rewrite RUN_DIR TYPE OLD NEW
//
// Given a journal file instead (a pipeline or batch journal), it rewrites
// that file alone: nothing else records its head.
func cmdJournalRewrite(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 4 {
		ts.Fatalf("usage: journal-rewrite RUN_DIR TYPE OLD NEW")
	}
	dir := ts.MkAbs(args[0])
	path := filepath.Join(dir, "journal.jsonl")
	alone := strings.HasSuffix(dir, ".jsonl")
	if alone {
		path = dir
	}
	data, err := os.ReadFile(path)
	ts.Check(err)
	lines := bytes.SplitAfter(data, []byte("\n"))
	prevField := regexp.MustCompile(`"prev":"[^"]*"`)
	var head, oldHead artifacts.Digest
	var out bytes.Buffer
	edited := 0
	for _, l := range lines {
		if len(l) == 0 {
			continue
		}
		line := strings.TrimSuffix(string(l), "\n")
		oldHead = artifacts.DigestBytes([]byte(line))
		if strings.Contains(line, `"type":"`+args[1]+`"`) && strings.Contains(line, args[2]) {
			line = strings.ReplaceAll(line, args[2], args[3])
			edited++
		}
		if head != "" {
			line = prevField.ReplaceAllLiteralString(line, `"prev":"`+string(head)+`"`)
		}
		head = artifacts.DigestBytes([]byte(line))
		out.WriteString(line + "\n")
	}
	if edited == 0 {
		ts.Fatalf("journal-rewrite: no %s line holds %q", args[1], args[2])
	}
	ts.Check(os.WriteFile(path, out.Bytes(), 0o644))
	if alone {
		return
	}
	manifest := filepath.Join(dir, "run.json")
	m, err := os.ReadFile(manifest)
	ts.Check(err)
	ts.Check(os.WriteFile(manifest, bytes.ReplaceAll(m, []byte(oldHead), []byte(head)), 0o644))
}
