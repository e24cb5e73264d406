// Package shellquotetest reads a printed command line back as bash would,
// for the tests of whatever prints one from others' words.
package shellquotetest

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Words is how many words line is to bash, when it is one simple command
// that expands nothing (no second command, no assignment before it, no
// substitution or parameter); otherwise an error says what it is.
func Words(line string) (int, error) {
	f, err := syntax.NewParser().Parse(strings.NewReader(line), "")
	if err != nil {
		return 0, fmt.Errorf("%q does not parse: %v", line, err)
	}
	if len(f.Stmts) != 1 {
		return 0, fmt.Errorf("%q is %d commands", line, len(f.Stmts))
	}
	call, ok := f.Stmts[0].Cmd.(*syntax.CallExpr)
	if !ok || len(call.Assigns) > 0 {
		return 0, fmt.Errorf("%q is not one plain command (%T)", line, f.Stmts[0].Cmd)
	}
	for i, w := range call.Args {
		for _, p := range w.Parts {
			switch p.(type) {
			case *syntax.CmdSubst, *syntax.ParamExp, *syntax.ArithmExp, *syntax.ProcSubst, *syntax.ExtGlob, *syntax.BraceExp:
				return 0, fmt.Errorf("%q: word %d expands (%T)", line, i, p)
			}
		}
	}
	return len(call.Args), nil
}
