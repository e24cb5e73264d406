package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-task/task/v3/taskfile/ast"
	"go.yaml.in/yaml/v3"
)

// taskfileNames are the names go-task looks for, in its order.
var taskfileNames = []string{"Taskfile.yml", "taskfile.yml", "Taskfile.yaml", "taskfile.yaml"}

// findTaskfile looks in dir and then its parents, as go-task does, so that
// `go tool task` works from any directory of the module.
func findTaskfile(dir string) (string, error) {
	for {
		for _, name := range taskfileNames {
			p := filepath.Join(dir, name)
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
				return p, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no Taskfile.yml in this directory or any parent")
		}
		dir = parent
	}
}

// loadTaskfile decodes a Taskfile with go-task's own parser, so the file
// stays one that go-task itself runs, and refuses every key this runner does
// not carry out: a key silently ignored would run a different task than the
// one written.
func loadTaskfile(path string) (*ast.Taskfile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var tf ast.Taskfile
	if err := yaml.Unmarshal(data, &tf); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if problems := unsupported(&tf); len(problems) > 0 {
		return nil, fmt.Errorf("%s uses what this runner does not carry out:\n  %s\nrun it with go-task itself (go run github.com/go-task/task/v3/cmd/task@latest), or keep the Taskfile to what docs/architecture.md lists",
			path, strings.Join(problems, "\n  "))
	}
	return &tf, nil
}

// unsupported lists the keys of tf outside the subset this runner carries
// out (see docs/architecture.md).
func unsupported(tf *ast.Taskfile) []string {
	var out []string
	add := func(where, what string) { out = append(out, where+": "+what) }
	if tf.Includes != nil && tf.Includes.Len() > 0 {
		add("taskfile", "includes")
	}
	if len(tf.Dotenv) > 0 {
		add("taskfile", "dotenv")
	}
	if len(tf.Set) > 0 || len(tf.Shopt) > 0 {
		add("taskfile", "set/shopt")
	}
	if tf.Method != "" && tf.Method != "checksum" {
		add("taskfile", "method "+tf.Method)
	}
	if tf.Output.Name != "" && tf.Output.Name != "interleaved" {
		add("taskfile", "output "+tf.Output.Name)
	}
	if tf.Run != "" && tf.Run != "always" {
		add("taskfile", "run "+tf.Run)
	}
	out = append(out, unsupportedVars("taskfile vars", tf.Vars)...)
	out = append(out, unsupportedVars("taskfile env", tf.Env)...)
	for name, t := range tf.Tasks.All(nil) {
		where := "task " + name
		switch {
		case t.Requires != nil && len(t.Requires.Vars) > 0:
			add(where, "requires")
		case len(t.Preconditions) > 0:
			add(where, "preconditions")
		case len(t.Generates) > 0:
			add(where, "generates")
		case len(t.Dotenv) > 0:
			add(where, "dotenv")
		case len(t.Platforms) > 0:
			add(where, "platforms")
		case len(t.Set) > 0 || len(t.Shopt) > 0:
			add(where, "set/shopt")
		case len(t.Prompt) > 0:
			add(where, "prompt")
		case t.If != "":
			add(where, "if")
		case len(t.Aliases) > 0:
			add(where, "aliases")
		case t.Method != "" && t.Method != "checksum":
			add(where, "method "+t.Method)
		case t.Run != "" && t.Run != "always":
			add(where, "run "+t.Run)
		case t.Prefix != "" || t.Label != "" || t.Interactive || t.Watch || t.Failfast:
			add(where, "prefix, label, interactive, watch or failfast")
		}
		for _, g := range t.Sources {
			if g.Negate || strings.Contains(g.Glob, "**") || strings.Contains(g.Glob, "{{") {
				add(where, "source "+g.Glob+" (only plain paths and one-level globs)")
			}
		}
		out = append(out, unsupportedVars(where+" vars", t.Vars)...)
		out = append(out, unsupportedVars(where+" env", t.Env)...)
		for _, d := range t.Deps {
			if d.For != nil {
				add(where, "a dep with for")
			}
			out = append(out, unsupportedVars(where+" dep vars", d.Vars)...)
		}
		for _, c := range t.Cmds {
			switch {
			case c.For != nil:
				add(where, "a command with for")
			case c.If != "":
				add(where, "a command with if")
			case c.Defer:
				add(where, "defer")
			case len(c.Platforms) > 0:
				add(where, "a command with platforms")
			case len(c.Set) > 0 || len(c.Shopt) > 0:
				add(where, "a command with set/shopt")
			case c.Timeout != 0:
				add(where, "a command with timeout")
			}
			out = append(out, unsupportedVars(where+" call vars", c.Vars)...)
		}
	}
	return out
}

// unsupportedVars refuses references and maps: only strings (templated)
// and sh: values are carried out.
func unsupportedVars(where string, vars *ast.Vars) []string {
	var out []string
	for name, v := range vars.All() {
		if v.Ref != "" {
			out = append(out, fmt.Sprintf("%s: %s is a ref", where, name))
			continue
		}
		switch v.Value.(type) {
		case nil, string, bool, int, float64:
		default:
			out = append(out, fmt.Sprintf("%s: %s is not a scalar", where, name))
		}
	}
	return out
}
