package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdDocBlock writes into the work tree what a reader copies from a doc
// of the repository, so that a script runs the docs as written:
//
//	docblock README.md 'yaml config' harness.yaml        the body of the block with that info string
//	                                                      (of several, the one whose first line is "# harness.yaml: ...")
//	docblock -lines README.md 'harness skills ' lines.sh  the lines of any block that start so
func cmdDocBlock(ts *testscript.TestScript, neg bool, args []string) {
	lines := len(args) == 4 && args[0] == "-lines"
	if lines {
		args = args[1:]
	}
	if neg || len(args) != 3 {
		ts.Fatalf("usage: docblock [-lines] DOC INFO|PREFIX DEST")
	}
	blocks, err := fencedBlocks(filepath.Join("../..", args[0]))
	ts.Check(err)
	// Where a doc has several blocks of that info string, the one meant
	// is the one whose first line names the file, as the docs' examples
	// do ("# go-test.yaml: ...").
	named := false
	if !lines {
		n := 0
		for _, b := range blocks {
			if b.info == args[1] {
				n++
			}
		}
		named = n > 1
	}
	var out strings.Builder
	found := 0
	for _, b := range blocks {
		switch {
		case lines:
			for _, l := range strings.SplitAfter(b.body, "\n") {
				if strings.HasPrefix(l, args[1]) {
					out.WriteString(l)
					found++
				}
			}
		case b.info == args[1] && (!named || strings.HasPrefix(b.body, "# "+filepath.Base(args[2])+":")):
			out.WriteString(b.body)
			found++
		}
	}
	if found == 0 || !lines && found > 1 {
		ts.Fatalf("docblock: %d matches of %q in %s, want one block or some lines", found, args[1], args[0])
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[2]), []byte(out.String()), 0o644))
}

// fencedBlock is one fenced code block of a Markdown file.
type fencedBlock struct {
	line int    // of the opening fence
	info string // the info string, as written after the fence
	body string
}

func fencedBlocks(file string) ([]fencedBlock, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var out []fencedBlock
	var cur *fencedBlock
	var body strings.Builder
	for n, line := range strings.Split(string(b), "\n") {
		fence := strings.HasPrefix(line, "```")
		switch {
		case cur == nil && fence:
			cur = &fencedBlock{line: n + 1, info: strings.TrimSpace(strings.TrimPrefix(line, "```"))}
			body.Reset()
		case cur != nil && fence:
			cur.body = body.String()
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			body.WriteString(line + "\n")
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("%s:%d: the block opened here is never closed", file, cur.line)
	}
	return out, nil
}
