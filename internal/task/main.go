// Command task runs the tasks of the module's Taskfile.yml: `go tool task
// NAME`. It is a small runner for the part of go-task's format that
// Taskfile.yml uses, read with go-task's own parser (taskfile/ast) and run
// with the shell interpreter go-task uses (mvdan.cc/sh), so the file stays
// one go-task runs. It exists because building go-task itself on a fresh
// machine took longer than everything else a first command does (its remote
// Taskfile support links cloud SDKs; docs/benchmarks.md). A key outside the
// subset is refused, never ignored.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, "task:", err)
		os.Exit(1)
	}
	os.Exit(Main(ctx, os.Args[1:], wd, os.Stdout, os.Stderr))
}

const usage = `usage: go tool task [flags] [TASK...] [VAR=value...]

Runs the named tasks of the Taskfile.yml found in this directory or a
parent (the default task when none is named). VAR=value sets a variable
for every task, over the Taskfile's own vars.

flags:
`

// Main runs the runner with args as if started in dir, and returns its exit
// status: 0, 2 for a usage error (an unknown flag or task), 1 for a
// Taskfile it cannot read, or the exit status of the command that failed.
func Main(ctx context.Context, args []string, dir string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("task", flag.ContinueOnError)
	fs.SetOutput(stderr)
	list := fs.Bool("list", false, "list the tasks that have a description")
	listAll := fs.Bool("list-all", false, "list every task")
	force := fs.Bool("force", false, "run even the tasks whose status or sources say they are up to date")
	dry := fs.Bool("dry", false, "print the commands, run none")
	silent := fs.Bool("silent", false, "print no command before running it")
	fs.BoolVar(list, "l", false, "short for --list")
	fs.BoolVar(listAll, "a", false, "short for --list-all")
	fs.BoolVar(force, "f", false, "short for --force")
	fs.BoolVar(dry, "n", false, "short for --dry")
	fs.BoolVar(silent, "s", false, "short for --silent")
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	path, err := findTaskfile(dir)
	if err != nil {
		fmt.Fprintln(stderr, "task:", err)
		return 1
	}
	tf, err := loadTaskfile(path)
	if err != nil {
		fmt.Fprintln(stderr, "task:", err)
		return 1
	}
	r := &runner{
		tf: tf, path: path, root: filepath.Dir(path), userDir: dir, cliVars: map[string]string{},
		force: *force, dry: *dry, silent: *silent, stdout: stdout, stderr: stderr,
	}
	var names []string
	for _, a := range fs.Args() {
		if k, v, ok := strings.Cut(a, "="); ok && k != "" && !strings.Contains(k, ":") {
			r.cliVars[k] = v
			continue
		}
		names = append(names, a)
	}
	if *list || *listAll {
		printList(r, stdout, *listAll)
		return 0
	}
	if len(names) == 0 {
		names = []string{"default"}
	}
	for _, name := range names {
		if err := r.run(ctx, name, nil); err != nil {
			return report(r, err, stderr)
		}
	}
	return 0
}

func report(r *runner, err error, stderr io.Writer) int {
	fmt.Fprintln(stderr, "task:", err)
	var unknown *unknownTaskError
	var failed *exitError
	switch {
	case errors.As(err, &unknown):
		fmt.Fprintln(stderr, "task: the tasks are:")
		printList(r, stderr, true)
		return 2
	case errors.As(err, &failed):
		return failed.status
	}
	return 1
}

func printList(r *runner, w io.Writer, all bool) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	var names []string
	for name := range r.tf.Tasks.Keys(nil) {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		t, _ := r.tf.Tasks.Get(name)
		if t.Desc == "" && !all {
			continue
		}
		fmt.Fprintf(tw, "* %s:\t%s\n", name, t.Desc)
	}
	tw.Flush()
}
