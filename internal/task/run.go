package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/template"

	"github.com/go-task/task/v3/taskfile/ast"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"
)

// runner carries out tasks of one Taskfile.
type runner struct {
	tf      *ast.Taskfile
	path    string // the Taskfile
	root    string // its directory
	userDir string // where the runner was started
	cliVars map[string]string
	force   bool // run even when status and sources say up to date
	dry     bool // print the commands, run nothing
	silent  bool
	stdout  io.Writer
	stderr  io.Writer
}

// exitError carries a command's exit status out of the runner, so that
// `go tool task X` exits as the failing command did.
type exitError struct {
	task   string
	status int
}

func (e *exitError) Error() string {
	return fmt.Sprintf("task %q failed: exit status %d", e.task, e.status)
}

// unknownTaskError is a usage error: the caller named a task the Taskfile
// does not have.
type unknownTaskError struct{ name string }

func (e *unknownTaskError) Error() string { return fmt.Sprintf("no task named %q", e.name) }

// run carries out the task name with the variables a caller passed, its
// deps first, unless its status and sources say it is up to date.
func (r *runner) run(ctx context.Context, name string, callVars *ast.Vars) error {
	t, ok := r.tf.Tasks.Get(name)
	if !ok {
		return &unknownTaskError{name: name}
	}
	dir := r.root
	vars, err := r.vars(ctx, name, t, callVars)
	if err != nil {
		return err
	}
	if t.Dir != "" {
		d, err := render(t.Dir, vars)
		if err != nil {
			return fmt.Errorf("task %q: dir: %w", name, err)
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(r.root, d)
		}
		dir = d
	}
	vars["TASK_DIR"] = dir
	env, err := r.env(t, vars)
	if err != nil {
		return fmt.Errorf("task %q: %w", name, err)
	}
	for _, d := range t.Deps {
		if err := r.run(ctx, d.Task, r.renderVars(d.Vars, vars)); err != nil {
			return err
		}
	}
	if !r.force && !r.dry {
		current, err := r.upToDate(ctx, name, t, dir, env, vars)
		if err != nil {
			return err
		}
		if current {
			if !r.silent {
				fmt.Fprintf(r.stderr, "task: %q is up to date\n", name)
			}
			return nil
		}
	}
	silent := r.silent || r.tf.Silent || (t.Silent != nil && *t.Silent)
	for _, c := range t.Cmds {
		if c.Task != "" {
			if err := r.run(ctx, c.Task, r.renderVars(c.Vars, vars)); err != nil && !c.IgnoreError {
				return err
			}
			continue
		}
		cmd, err := render(c.Cmd, vars)
		if err != nil {
			return fmt.Errorf("task %q: %w", name, err)
		}
		if !silent && !c.Silent || r.dry {
			fmt.Fprintf(r.stderr, "task: [%s] %s\n", name, cmd)
		}
		if r.dry {
			continue
		}
		if err := r.shell(ctx, cmd, dir, env, r.stdout); err != nil && !c.IgnoreError {
			var status interp.ExitStatus
			if errors.As(err, &status) {
				return &exitError{task: name, status: int(status)}
			}
			return fmt.Errorf("task %q: %w", name, err)
		}
	}
	if len(t.Sources) > 0 && !r.dry {
		sum, err := r.checksum(t, dir)
		if err != nil {
			return err
		}
		return r.writeChecksum(name, sum)
	}
	return nil
}

// vars resolves the variables of one task call in go-task's order, each
// level overriding the one before and able to use it in its templates:
// the environment, the special variables, the Taskfile's env and vars, the
// command line's VAR=value, the caller's vars, the task's own vars.
func (r *runner) vars(ctx context.Context, name string, t *ast.Task, callVars *ast.Vars) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			out[k] = v
		}
	}
	maps.Copy(out, map[string]string{
		"ROOT_DIR": r.root, "ROOT_TASKFILE": r.path, "TASKFILE": r.path, "TASKFILE_DIR": r.root,
		"TASK": name, "USER_WORKING_DIR": r.userDir, "TASK_VERSION": "harness-subset",
	})
	for _, level := range []*ast.Vars{r.tf.Env, r.tf.Vars} {
		if err := r.resolve(ctx, level, out); err != nil {
			return nil, fmt.Errorf("task %q: %w", name, err)
		}
	}
	maps.Copy(out, r.cliVars)
	for _, level := range []*ast.Vars{callVars, t.Vars} {
		if err := r.resolve(ctx, level, out); err != nil {
			return nil, fmt.Errorf("task %q: %w", name, err)
		}
	}
	return out, nil
}

// resolve adds each variable of level to vars, rendering its template (or
// running its sh: command) against what vars already hold.
func (r *runner) resolve(ctx context.Context, level *ast.Vars, vars map[string]string) error {
	for k, v := range level.All() {
		switch {
		case v.Sh != nil:
			cmd, err := render(*v.Sh, vars)
			if err != nil {
				return fmt.Errorf("var %s: %w", k, err)
			}
			var out strings.Builder
			if err := r.shell(ctx, cmd, r.root, environ(vars), &out); err != nil {
				return fmt.Errorf("var %s: sh %q: %w", k, cmd, err)
			}
			vars[k] = strings.TrimRight(out.String(), "\r\n")
		case v.Value == nil:
			vars[k] = ""
		default:
			s, err := render(fmt.Sprint(v.Value), vars)
			if err != nil {
				return fmt.Errorf("var %s: %w", k, err)
			}
			vars[k] = s
		}
	}
	return nil
}

// renderVars renders a caller's vars (a dep's or a task: command's) in the
// caller's scope, as go-task does, before the callee sees them.
func (r *runner) renderVars(level *ast.Vars, scope map[string]string) *ast.Vars {
	if level == nil {
		return nil
	}
	out := ast.NewVars()
	for k, v := range level.All() {
		if s, ok := v.Value.(string); ok {
			if rendered, err := render(s, scope); err == nil {
				v.Value = rendered
			}
		}
		out.Set(k, v)
	}
	return out
}

// env is the environment a task's commands run with: the runner's own,
// then the Taskfile's env, then the task's.
func (r *runner) env(t *ast.Task, vars map[string]string) ([]string, error) {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	for _, level := range []*ast.Vars{r.tf.Env, t.Env} {
		for k, v := range level.All() {
			s, err := render(fmt.Sprint(v.Value), vars)
			if err != nil {
				return nil, fmt.Errorf("env %s: %w", k, err)
			}
			env[k] = s
		}
	}
	return environ(env), nil
}

func environ(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, k+"="+m[k])
	}
	return out
}

// upToDate is go-task's rule: a task with status commands, sources, or
// both, is up to date when every status command exits 0 and the sources'
// checksum matches the one of its last successful run.
func (r *runner) upToDate(ctx context.Context, name string, t *ast.Task, dir string, env []string, vars map[string]string) (bool, error) {
	if len(t.Status) == 0 && len(t.Sources) == 0 {
		return false, nil
	}
	for _, s := range t.Status {
		cmd, err := render(s, vars)
		if err != nil {
			return false, fmt.Errorf("task %q: status: %w", name, err)
		}
		if err := r.shell(ctx, cmd, dir, env, io.Discard); err != nil {
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			return false, nil
		}
	}
	if len(t.Sources) == 0 {
		return true, nil
	}
	sum, err := r.checksum(t, dir)
	if err != nil {
		return false, err
	}
	last, err := os.ReadFile(r.checksumPath(name))
	return err == nil && strings.TrimSpace(string(last)) == sum, nil
}

// checksum digests the names and contents of the task's sources.
func (r *runner) checksum(t *ast.Task, dir string) (string, error) {
	var files []string
	for _, g := range t.Sources {
		pattern := g.Glob
		if !filepath.IsAbs(pattern) {
			pattern = filepath.Join(dir, pattern)
		}
		matches, err := filepath.Glob(pattern)
		if err != nil {
			return "", fmt.Errorf("source %q: %w", g.Glob, err)
		}
		files = append(files, matches...)
	}
	slices.Sort(files)
	h := sha256.New()
	for _, f := range slices.Compact(files) {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("source %s: %w", f, err)
		}
		fmt.Fprintf(h, "%s\x00%d\x00", f, len(data))
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func (r *runner) checksumPath(name string) string {
	return filepath.Join(r.root, ".task", "checksum", strings.ReplaceAll(name, ":", "-"))
}

func (r *runner) writeChecksum(name, sum string) error {
	p := r.checksumPath(name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, []byte(sum+"\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// shell runs one command line with the same shell interpreter go-task
// uses (mvdan.cc/sh), so a command behaves here as under go-task. A
// `task ...` command inside it is this runner, not a program on PATH.
func (r *runner) shell(ctx context.Context, cmd, dir string, env []string, stdout io.Writer) error {
	file, err := syntax.NewParser().Parse(strings.NewReader(cmd), "")
	if err != nil {
		return fmt.Errorf("parse %q: %w", cmd, err)
	}
	sh, err := interp.New(
		interp.Dir(dir),
		interp.Env(expand.ListEnviron(env...)),
		interp.StdIO(os.Stdin, stdout, r.stderr),
		interp.ExecHandlers(r.taskBuiltin),
	)
	if err != nil {
		return err
	}
	return sh.Run(ctx, file)
}

func (r *runner) taskBuiltin(next interp.ExecHandlerFunc) interp.ExecHandlerFunc {
	return func(ctx context.Context, args []string) error {
		if args[0] != "task" {
			return next(ctx, args)
		}
		hc := interp.HandlerCtx(ctx)
		if code := Main(ctx, args[1:], hc.Dir, hc.Stdout, hc.Stderr); code != 0 {
			return interp.ExitStatus(code)
		}
		return nil
	}
}

// render fills a Taskfile template; a name with no value renders empty,
// as under go-task.
func render(text string, vars map[string]string) (string, error) {
	if !strings.Contains(text, "{{") {
		return text, nil
	}
	tmpl, err := template.New("").Option("missingkey=zero").Parse(text)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if err := tmpl.Execute(&b, vars); err != nil {
		return "", err
	}
	return b.String(), nil
}
