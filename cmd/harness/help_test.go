package main

import (
	"bytes"
	"io"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/urfave/cli/v3"
)

// eachCommand calls fn with the path of every command and the command.
func eachCommand(c *cli.Command, path []string, fn func([]string, *cli.Command)) {
	fn(path, c)
	for _, sub := range c.Commands {
		if !sub.Hidden {
			eachCommand(sub, append(append([]string(nil), path...), sub.Name), fn)
		}
	}
}

func helpOf(t *testing.T, args []string) string {
	t.Helper()
	var out bytes.Buffer
	app := newApp(strings.NewReader(""), &out, io.Discard)
	if err := app.Run(t.Context(), append(append([]string{"harness"}, args...), "--help")); err != nil {
		t.Fatalf("harness %s --help: %v", strings.Join(args, " "), err)
	}
	return out.String()
}

// TestHelpFitsAndShowsDefaults: the help of every command keeps to 80
// columns (stdout is not a terminal here), shows every flag's default at
// the end of its text and nowhere else, and names every value with a word
// of its own rather than the flag library's "string" or a generic one.
func TestHelpFitsAndShowsDefaults(t *testing.T) {
	inUsage := regexp.MustCompile(`\(default|[;,:] default`)
	eachCommand(newApp(strings.NewReader(""), io.Discard, io.Discard), nil, func(path []string, c *cli.Command) {
		name := strings.TrimSpace("harness " + strings.Join(path, " "))
		help := helpOf(t, path)
		flat := strings.Join(strings.Fields(help), " ")
		for _, line := range strings.Split(help, "\n") {
			if n := utf8.RuneCountInString(line); n > 80 {
				t.Errorf("%s --help: a line of %d columns: %q", name, n, line)
			}
		}
		for _, f := range c.VisibleFlags() {
			d, ok := f.(cli.DocGenerationFlag)
			if !ok {
				continue
			}
			head := flagHead(f)
			if m := inUsage.FindString(d.GetUsage()); m != "" {
				t.Errorf("%s %s: the usage text says a default (%q): give it as the flag's default", name, head, m)
			}
			if !d.TakesValue() {
				continue
			}
			if _, ok := f.(*cli.BoolFlag); ok {
				continue
			}
			if p, _ := unquoteUsage(d.GetUsage()); p == "" {
				t.Errorf("%s %s: no word for the value: put one between backquotes in the usage", name, head)
			}
			if def := d.GetDefaultText(); def != "" || !zeroValue(f) || isNumber(f) {
				if !strings.Contains(flat, "(default: "+flagDefault(f)+")") || flagDefault(f) == "" {
					t.Errorf("%s %s: its default is not shown", name, head)
				}
			}
		}
	})
}

func isNumber(f cli.Flag) bool {
	switch f.(type) {
	case *cli.IntFlag, *cli.Int64Flag, *cli.UintFlag, *cli.DurationFlag, *cli.FloatFlag:
		return true
	}
	return false
}

func TestWrapText(t *testing.T) {
	for _, c := range []struct {
		text        string
		first, rest int
		want        string
	}{
		{"one two three", 2, 4, "  one two\n    three\n"},
		{"abcdefghijklmn", 0, 0, "abcdefghij\nklmn\n"},
		{"", 3, 3, "\n"},
	} {
		if got := wrapText(c.text, c.first, c.rest, 10); got != c.want {
			t.Errorf("wrapText(%q): %q, want %q", c.text, got, c.want)
		}
	}
}
