package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// taskfile writes body as the Taskfile.yml of a new directory.
func taskfile(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "Taskfile.yml"), []byte("version: '3'\n"+body), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func runTask(t *testing.T, dir string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(context.Background(), args, dir, &out, &errb)
	return code, out.String(), errb.String()
}

func TestRun(t *testing.T) {
	for _, tc := range []struct {
		name     string
		taskfile string
		args     []string
		code     int
		stdout   string // exact
		stderr   string // contained
	}{
		{
			name: "vars in go-task's order: the task's own over the caller's over the command line's over the file's",
			taskfile: `vars: {A: file, B: file, C: file, D: file}
tasks:
  callee:
    vars: {D: own}
    cmds: ['echo {{.A}} {{.B}} {{.C}} {{.D}} {{.MISSING}}.']
  caller:
    cmds: [{task: callee, vars: {C: call, D: call}}]
`,
			args: []string{"caller", "B=cli", "C=cli"}, stdout: "file cli call own .\n",
		},
		{
			name: "a var's template sees the vars before it, and the special ones",
			taskfile: `vars: {BIN: '{{.ROOT_DIR}}/bin', TOOL: '{{.BIN}}/x'}
tasks:
  default: {cmds: ['test "{{.TOOL}}" = "$PWD/bin/x" && echo ok'], silent: true}
`,
			stdout: "ok\n",
		},
		{
			name: "sh vars run in the shell",
			taskfile: `vars: {V: {sh: 'echo dynamic'}}
tasks:
  default: {cmds: ['echo {{.V}}'], silent: true}
`,
			stdout: "dynamic\n",
		},
		{
			name: "deps run first, then the commands, each echoed on stderr",
			taskfile: `tasks:
  a: {cmds: [echo a]}
  b: {deps: [a], cmds: [echo b]}
`,
			args: []string{"b"}, stdout: "a\nb\n", stderr: "task: [b] echo b",
		},
		{
			name: "a task whose status commands all pass is up to date",
			taskfile: `tasks:
  default: {cmds: [echo ran], status: [true, 'test -d .']}
`,
			stderr: `"default" is up to date`,
		},
		{
			name: "--force runs it anyway",
			taskfile: `tasks:
  default: {cmds: [echo ran], status: [true]}
`,
			args: []string{"--force"}, stdout: "ran\n",
		},
		{
			name: "one failing status command makes it run",
			taskfile: `tasks:
  default: {cmds: [echo ran], status: [true, false]}
`,
			stdout: "ran\n",
		},
		{
			name: "a failing command's exit status is the runner's, and later commands do not run",
			taskfile: `tasks:
  default: {cmds: ['exit 7', echo after]}
`,
			code: 7, stderr: `task "default" failed: exit status 7`,
		},
		{
			name: "ignore_error goes on",
			taskfile: `tasks:
  default: {cmds: [{cmd: 'exit 7', ignore_error: true}, echo after], silent: true}
`,
			stdout: "after\n",
		},
		{
			name: "an unknown task is a usage error listing the tasks",
			taskfile: `tasks:
  build: {desc: Build it, cmds: [true]}
`,
			args: []string{"biuld"}, code: 2, stderr: "* build:",
		},
		{
			name: "an unknown flag is a usage error",
			taskfile: `tasks: {default: {cmds: [true]}}
`,
			args: []string{"--nope"}, code: 2,
		},
		{
			name: "task inside a command is this runner",
			taskfile: `tasks:
  default: {cmds: [task inner V=x], silent: true}
  inner: {cmds: ['echo inner {{.V}}'], silent: true}
`,
			stdout: "inner x\n",
		},
		{
			name: "dir is relative to the Taskfile",
			taskfile: `tasks:
  default: {dir: sub, cmds: ['basename "$PWD"'], silent: true}
`,
			stdout: "sub\n",
		},
		{
			name: "--list shows the tasks with a description",
			taskfile: `tasks:
  build: {desc: Build it, cmds: [true]}
  hidden: {cmds: [true]}
`,
			args: []string{"--list"}, stdout: "* build:  Build it\n",
		},
		{
			name: "--dry prints and runs nothing",
			taskfile: `tasks:
  default: {cmds: [echo ran]}
`,
			args: []string{"--dry"}, stderr: "task: [default] echo ran",
		},
		{
			name: "env reaches the commands",
			taskfile: `env: {FROM_FILE: '{{.ROOT_DIR}}'}
tasks:
  default: {env: {FROM_TASK: t}, cmds: ['test "$FROM_FILE" = "$PWD" && echo $FROM_TASK'], silent: true}
`,
			stdout: "t\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := taskfile(t, tc.taskfile)
			os.Mkdir(filepath.Join(dir, "sub"), 0o755)
			code, stdout, stderr := runTask(t, dir, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstderr: %s", code, tc.code, stderr)
			}
			if stdout != tc.stdout {
				t.Errorf("stdout %q, want %q\nstderr: %s", stdout, tc.stdout, stderr)
			}
			if !strings.Contains(stderr, tc.stderr) {
				t.Errorf("stderr %q does not contain %q", stderr, tc.stderr)
			}
		})
	}
}

// TestSourcesChecksum: a task with sources runs again only when a source
// changed since its last successful run.
func TestSourcesChecksum(t *testing.T) {
	dir := taskfile(t, `tasks:
  default: {sources: [in.txt, 'glob/*.txt'], cmds: [echo ran], silent: true}
`)
	os.Mkdir(filepath.Join(dir, "glob"), 0o755)
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("in.txt", "one")
	write("glob/a.txt", "a")
	for i, step := range []struct {
		change func()
		ran    bool
	}{
		{func() {}, true},
		{func() {}, false},
		{func() { write("in.txt", "two") }, true},
		{func() {}, false},
		{func() { write("glob/b.txt", "b") }, true},
	} {
		step.change()
		_, stdout, stderr := runTask(t, dir)
		if got := stdout == "ran\n"; got != step.ran {
			t.Errorf("step %d: ran %v, want %v (stderr %s)", i, got, step.ran, stderr)
		}
	}
}

// TestRefusesWhatItDoesNotCarryOut: a key outside the subset fails the
// load, naming the key, rather than running a different task.
func TestRefusesWhatItDoesNotCarryOut(t *testing.T) {
	for name, body := range map[string]string{
		"includes":      "includes: {other: ./other.yml}\ntasks: {default: {cmds: [true]}}\n",
		"dotenv":        "dotenv: [.env]\ntasks: {default: {cmds: [true]}}\n",
		"preconditions": "tasks: {default: {preconditions: [true], cmds: [true]}}\n",
		"for":           "tasks: {default: {cmds: [{cmd: echo, for: [a, b]}]}}\n",
		"defer":         "tasks: {default: {cmds: [{defer: echo}]}}\n",
		"ref":           "vars: {A: {ref: .B}}\ntasks: {default: {cmds: [true]}}\n",
		"run once":      "tasks: {default: {run: once, cmds: [true]}}\n",
		"glob **":       "tasks: {default: {sources: ['**/*.go'], cmds: [true]}}\n",
		"platforms":     "tasks: {default: {platforms: [linux], cmds: [true]}}\n",
		"generates":     "tasks: {default: {generates: [out], cmds: [true]}}\n",
	} {
		t.Run(name, func(t *testing.T) {
			dir := taskfile(t, body)
			code, stdout, stderr := runTask(t, dir)
			if code != 1 || stdout != "" || !strings.Contains(stderr, "does not carry out") {
				t.Errorf("exit %d, stdout %q, stderr %q: want a refusal", code, stdout, stderr)
			}
		})
	}
}

// TestModuleTaskfile holds the module's own Taskfile.yml to the subset:
// a task added with a key the runner does not carry out fails here first.
func TestModuleTaskfile(t *testing.T) {
	tf, err := loadTaskfile("../../Taskfile.yml")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"build", "test", "lint", "ci", "demo", "tools"} {
		if _, ok := tf.Tasks.Get(name); !ok {
			t.Errorf("Taskfile.yml has no %s task", name)
		}
	}
}
