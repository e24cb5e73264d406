package main

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v3"
)

// flagsOf are the flag names a command accepts, its ancestors' included.
func flagsOf(path []*cli.Command) []string {
	var out []string
	for _, c := range path {
		for _, f := range c.Flags {
			out = append(out, f.Names()...)
		}
	}
	return append(out, "help", "h", "version", "v")
}

// commandAt finds the command named by words under root ("resume",
// "skills approve"), with the path to it.
func commandAt(root *cli.Command, words []string) []*cli.Command {
	path := []*cli.Command{root}
	cur := root
	for _, w := range words {
		var next *cli.Command
		for _, c := range cur.Commands {
			if c.Name == w || slices.Contains(c.Aliases, w) {
				next = c
			}
		}
		if next == nil {
			break
		}
		path, cur = append(path, next), next
	}
	return path
}

var (
	advisedFlag = regexp.MustCompile(`(^|[^-\w])--([a-z][a-z0-9-]*)`)
	// "harness pipeline resume DIR --approve" advises resume's flag.
	harnessCall = regexp.MustCompile("harness((?: [a-z][a-z0-9-]*)+)")
)

// TestAdvisedFlagsExist: every flag a command's help names is one that
// command takes, or, where the help names another command (`harness
// resume RUN --approve ID`), one that command takes. A help that advises
// a flag nobody accepts sends a user to a refusal.
func TestAdvisedFlagsExist(t *testing.T) {
	root := newApp(strings.NewReader(""), io.Discard, io.Discard)
	var walk func(path []*cli.Command)
	walk = func(path []*cli.Command) {
		c := path[len(path)-1]
		texts := []string{c.Usage, c.UsageText, c.Description}
		for _, f := range c.Flags {
			if u, ok := f.(interface{ GetUsage() string }); ok {
				texts = append(texts, u.GetUsage())
			}
		}
		for _, text := range texts {
			for _, m := range advisedFlag.FindAllStringSubmatchIndex(text, -1) {
				name := text[m[4]:m[5]]
				target := path
				// The nearest `harness ...` before the flag, in the same
				// sentence, names the command it belongs to.
				before := text[:m[4]]
				if i := strings.LastIndexAny(before, ".;\n"); i >= 0 {
					before = before[i+1:]
				}
				if calls := harnessCall.FindAllStringSubmatch(before, -1); len(calls) > 0 {
					target = commandAt(root, strings.Fields(calls[len(calls)-1][1]))
				}
				// A group's help (harness skills) speaks of its commands'
				// flags.
				if len(c.Commands) > 0 && len(target) == len(path) {
					ok := false
					for _, sub := range c.Commands {
						ok = ok || slices.Contains(flagsOf(append(slices.Clone(path), sub)), name)
					}
					if ok {
						continue
					}
				}
				if !slices.Contains(flagsOf(target), name) {
					names := []string{}
					for _, p := range target {
						names = append(names, p.Name)
					}
					t.Errorf("%q advises --%s, which `%s` does not take", strings.Join(commandNames(path), " "), name, strings.Join(names, " "))
				}
			}
		}
		for _, sub := range c.Commands {
			walk(append(slices.Clone(path), sub))
		}
	}
	walk([]*cli.Command{root})
}

func commandNames(path []*cli.Command) []string {
	var out []string
	for _, c := range path {
		out = append(out, c.Name)
	}
	return out
}

// TestMessagesAdviseRealFlags: every --flag a message in the code names is
// taken by some command (a message that advises a flag no command has is
// a dead end).
func TestMessagesAdviseRealFlags(t *testing.T) {
	root := newApp(strings.NewReader(""), io.Discard, io.Discard)
	known := map[string]bool{"help": true, "version": true}
	var walk func(c *cli.Command)
	walk = func(c *cli.Command) {
		for _, f := range c.Flags {
			for _, n := range f.Names() {
				known[n] = true
			}
		}
		for _, s := range c.Commands {
			walk(s)
		}
	}
	walk(root)
	// Flags of the programs harness runs, which its messages also name.
	for _, n := range []string{"sandbox-mode", "unshare-all", "cpu", "fsize", "nofile", "nproc", "reuid", "regid", "clear-groups",
		"inh-caps", "ambient-caps", "bounding-set", "no-new-privs", "ro-bind", "bind", "tmpfs", "remount-ro", "seccomp", "chdir",
		"die-with-parent", "new-session", "proc", "dev", "symlink", "ro-bind-try", "uid", "gid", "cap-drop", "unshare-user",
		"ro-bind-fd", "bind-fd", "no-prompt", "allow-", "deny-", "socket", "listen", "child", "ro", "rw", "ro-file", "rw-file",
		"read-dir", "beneath", "exec", "limit-exec", "exec-layer-only", "names", "noproxy", "max-time",
		"cap-add", "noexec", "exec-mount", "arg", "keep-mode", "perms", "file", "confined", "script-gorace"} {
		known[n] = true
	}
	str := regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|`[^`]*`")
	for _, dir := range []string{"../../run", "../../runopts", "../../rundir", "../../kube", "../../schedule", "../../pipeline", "../../tools", "../../forge", "../../store", "../../skills", "../../scripts", "."} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, lit := range str.FindAllString(string(src), -1) {
				for _, m := range advisedFlag.FindAllStringSubmatch(lit, -1) {
					if !known[m[2]] && !strings.HasPrefix(m[2], "allow-") && !strings.HasPrefix(m[2], "deny-") {
						t.Errorf("%s: %s names --%s, which no harness command takes", f, shorten(lit, 100), m[2])
					}
				}
			}
		}
	}
}
