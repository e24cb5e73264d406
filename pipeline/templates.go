package pipeline

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/template"
	tparse "text/template/parse"
)

// What a unit's templates may read, checked before anything runs: a
// reference that would fail after earlier phases spent their tokens is a
// problem of the file.

// phaseFields are what a template sees of a phase it needs: the keys
// templateData gives each (phase.go).
var phaseFields = []string{"answer", "answerFile", "runDir", "status", "structuredOutput"}

// templateProblems are the references of t that fail for unit u: a phase
// outside its needs, a field a phase does not have, a var that is not
// defined, a task field other than id, or anything else at the top.
func (f *File) templateProblems(t *template.Template, u *Phase, what string) []string {
	if t == nil || t.Tree == nil || t.Root == nil {
		return nil
	}
	vars := map[string]bool{}
	for k := range f.Vars {
		vars[k] = true
	}
	for k := range u.vars {
		vars[k] = true
	}
	var out []string
	say := func(format string, args ...any) {
		out = append(out, fmt.Sprintf("%s %q: %s %s", f.unit, u.Name, what, fmt.Sprintf(format, args...)))
	}
	check := func(path []string) {
		if len(path) == 0 {
			return
		}
		switch path[0] {
		case "phases":
			if len(path) < 2 {
				return
			}
			if !slices.Contains(u.Needs, path[1]) {
				needs := "none"
				if len(u.Needs) > 0 {
					needs = strings.Join(u.Needs, ", ")
				}
				say("reads .phases.%s, which is not in its needs (needs: %s): add it to needs, or read a phase it needs", path[1], needs)
				return
			}
			if len(path) > 2 && !slices.Contains(phaseFields, path[2]) {
				say("reads .phases.%s.%s: a phase has %s", path[1], path[2], strings.Join(phaseFields, ", "))
			}
		case "vars":
			if len(path) > 1 && !vars[path[1]] {
				defined := "none"
				if len(vars) > 0 {
					defined = strings.Join(slices.Sorted(maps.Keys(vars)), ", ")
				}
				say("reads .vars.%s, which is not defined (vars: %s): define it under vars: or pass --var %s=VALUE", path[1], defined, path[1])
			}
		case "task":
			if len(path) > 1 && path[1] != "id" {
				say("reads .task.%s: a template has only .task.id", path[1])
			}
		default:
			say("reads .%s: a template reads .vars, .phases and .task", path[0])
		}
	}
	walkFields(t.Root, true, check)
	return out
}

// walkFields calls check with the field path of every reference from the
// template's top: .a.b.c, and $.a.b.c anywhere. Inside range and with the
// dot is something else, so only $-references are checked there.
func walkFields(n tparse.Node, atTop bool, check func([]string)) {
	switch n := n.(type) {
	case *tparse.ListNode:
		if n == nil {
			return
		}
		for _, c := range n.Nodes {
			walkFields(c, atTop, check)
		}
	case *tparse.ActionNode:
		walkFields(n.Pipe, atTop, check)
	case *tparse.PipeNode:
		if n == nil {
			return
		}
		for _, c := range n.Cmds {
			walkFields(c, atTop, check)
		}
	case *tparse.CommandNode:
		for _, a := range n.Args {
			walkFields(a, atTop, check)
		}
	case *tparse.FieldNode:
		if atTop {
			check(n.Ident)
		}
	case *tparse.VariableNode:
		if len(n.Ident) > 1 && n.Ident[0] == "$" {
			check(n.Ident[1:])
		}
	case *tparse.ChainNode:
		walkFields(n.Node, atTop, check)
	case *tparse.IfNode:
		walkBranch(&n.BranchNode, atTop, atTop, check)
	case *tparse.RangeNode:
		walkBranch(&n.BranchNode, atTop, false, check)
	case *tparse.WithNode:
		walkBranch(&n.BranchNode, atTop, false, check)
	case *tparse.TemplateNode:
		walkFields(n.Pipe, atTop, check)
	}
}

// walkBranch walks an if, range or with: its body at bodyTop (range and
// with move the dot), the rest where the branch stands.
func walkBranch(b *tparse.BranchNode, atTop, bodyTop bool, check func([]string)) {
	walkFields(b.Pipe, atTop, check)
	walkFields(b.List, bodyTop, check)
	walkFields(b.ElseList, atTop, check)
}
