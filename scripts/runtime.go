package scripts

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Runtimes a script can run under.
const (
	RuntimeDeno   = "deno"
	RuntimeBash   = "bash"
	RuntimeSh     = "sh"
	RuntimePython = "python"
	RuntimeNode   = "node"
)

// Refusal is a script that must not run, with a stable code.
type Refusal struct {
	Code string
	Msg  string
}

func (r *Refusal) Error() string { return r.Msg }

// Command builds the argv that runs the script at scriptPath (a path as
// the sandbox sees it) under runtime. Interpreter flags in a shebang are
// refused, except Deno permission flags on a `deno run` shebang, which
// are the only flags passed to Deno.
func Command(runtime, shebang, scriptPath string, args []string) ([]string, error) {
	fields := strings.Fields(strings.TrimPrefix(shebang, "#!"))
	if len(fields) > 0 && filepath.Base(fields[0]) == "env" {
		fields = fields[1:]
		if len(fields) > 0 && fields[0] == "-S" {
			fields = fields[1:]
		}
	}
	var flags []string
	if len(fields) > 1 {
		flags = fields[1:]
	}
	switch runtime {
	case RuntimeDeno:
		if len(flags) > 0 && flags[0] == "run" {
			flags = flags[1:]
		}
		for _, f := range flags {
			if !(strings.HasPrefix(f, "--allow-") || strings.HasPrefix(f, "--deny-")) {
				return nil, &Refusal{Code: "script_runtime_flags", Msg: fmt.Sprintf("shebang flag %q is not a Deno permission flag; only --allow-* and --deny-* are passed to deno run", f)}
			}
		}
		argv := append([]string{"deno", "run", "--no-prompt"}, flags...)
		return append(append(argv, scriptPath), args...), nil
	case RuntimeBash, RuntimeSh, RuntimePython, RuntimeNode:
		if len(flags) > 0 {
			return nil, &Refusal{Code: "script_runtime_flags", Msg: fmt.Sprintf("shebang interpreter flags %q are refused: harness runs the interpreter itself; move options into the script", strings.Join(flags, " "))}
		}
		bin := map[string]string{RuntimeBash: "bash", RuntimeSh: "sh", RuntimePython: "python3", RuntimeNode: "node"}[runtime]
		return append([]string{bin, scriptPath}, args...), nil
	}
	return nil, &Refusal{Code: "script_runtime_unsupported", Msg: fmt.Sprintf("runtime %q is not supported; scripts run under deno, bash, sh, python3 or node (give the script a shebang or extension)", runtime)}
}

// LookupBinary finds an executable ELF binary for name on PATH, following
// symlinks. Wrapper scripts (pyenv shims, for example) are skipped: they
// would need their own interpreter and home directory inside the sandbox.
// So are relative PATH entries (RelativePathEntries), which the error
// names when nothing is found.
func LookupBinary(name, path string) (string, error) {
	if p, ok := lookupOnPath(name, path, isELF); ok {
		return p, nil
	}
	if rel := RelativePathEntries(path); len(rel) > 0 {
		return "", fmt.Errorf("%s not found on PATH (relative PATH entries skipped: %s)", name, quoteAll(rel))
	}
	return "", errors.New(name + " not found on PATH")
}

// lookupOnPath is the first executable regular file named name, links
// followed, in an absolute entry of path that accept takes. A relative
// entry names wherever harness was started, never a place to take
// programs from.
func lookupOnPath(name, path string, accept func(string) bool) (string, bool) {
	for _, dir := range filepath.SplitList(path) {
		if !filepath.IsAbs(dir) {
			continue
		}
		p, err := filepath.EvalSymlinks(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		fi, err := os.Stat(p)
		if err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 && accept(p) {
			return p, true
		}
	}
	return "", false
}

func isELF(p string) bool {
	// Judged by the descriptor: a FIFO or a device put where a regular
	// file was listed (a shared directory an exec entry names) is not
	// waited on or read.
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return false
	}
	var head [4]byte
	n, _ := f.Read(head[:])
	return n == 4 && bytes.Equal(head[:], []byte("\x7fELF"))
}

// HelperName is the sandbox helper's own program, found beside the
// harness binary when it was installed there.
const HelperName = "harness-sandbox"

// Helper is the program to start as the sandbox helper: harness-sandbox
// beside self when it is there and executable, else self (the harness
// binary plays the helper too, at the cost of its longer start).
func Helper(self string) string {
	if self == "" {
		return ""
	}
	real, err := filepath.EvalSymlinks(self)
	if err != nil {
		return self
	}
	p := filepath.Join(filepath.Dir(real), HelperName)
	if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
		return p
	}
	return self
}
