package main

import (
	"io"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/urfave/cli/v3"
)

// Help is laid out here rather than by the flag library's templates: they
// print each flag as one tab-aligned cell (lines of hundreds of columns),
// show a default only when it is not a zero value, and call a value
// without a named placeholder a "string". Here every line fits the width
// (the terminal's, else 80), each flag's usage sits under its name, its
// default is always at the end of its text before its variables, and
// flags of one category stand together.
func init() { cli.HelpPrinter = printHelp }

// helpWidthKey holds, in the root command's Metadata, the width help is
// wrapped to: the terminal's when stdout is one (set by mainWith).
const helpWidthKey = "helpWidth"

const defaultHelpWidth = 80

func helpWidth(c *cli.Command) int {
	if w, ok := c.Root().Metadata[helpWidthKey].(int); ok && w >= 40 {
		return w
	}
	return defaultHelpWidth
}

func printHelp(w io.Writer, _ string, data any) {
	if c, ok := data.(*cli.Command); ok {
		io.WriteString(w, helpText(c, helpWidth(c)))
	}
}

// helpText is the help of c wrapped to width columns.
func helpText(c *cli.Command, width int) string {
	var b strings.Builder
	section := func(title string) {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString(title + ":\n")
	}
	section("NAME")
	name := c.FullName()
	if c.Usage != "" {
		name += " - " + c.Usage
	}
	b.WriteString(wrapText(name, 3, 5, width))

	section("USAGE")
	usage := c.UsageText
	if usage == "" {
		usage = c.FullName()
		if len(c.VisibleCommands()) > 0 {
			usage += " COMMAND"
		}
		if len(c.VisibleFlags()) > 0 {
			usage += " [OPTIONS]"
		}
		if c.ArgsUsage != "" {
			usage += " " + c.ArgsUsage
		}
	}
	for _, line := range strings.Split(usage, "\n") {
		b.WriteString(wrapText(strings.TrimSpace(line), 3, 7, width))
	}

	if c.Root() == c && c.Version != "" && !c.HideVersion {
		section("VERSION")
		b.WriteString(wrapText(c.Version, 3, 3, width))
	}
	if c.Description != "" {
		section("DESCRIPTION")
		for i, p := range paragraphs(c.Description) {
			if i > 0 {
				b.WriteString("\n")
			}
			for _, line := range p {
				lead := len(line) - len(strings.TrimLeft(line, " "))
				b.WriteString(wrapText(strings.TrimSpace(line), 3+lead, 3+lead+hang(line), width))
			}
		}
	}
	if cmds := c.VisibleCommands(); len(cmds) > 0 {
		section("COMMANDS")
		col := 0
		for _, sub := range cmds {
			col = max(col, len(strings.Join(sub.Names(), ", ")))
		}
		col = min(col, 16)
		for _, sub := range cmds {
			names := strings.Join(sub.Names(), ", ")
			if len(names) > col {
				b.WriteString("   " + names + "\n")
				b.WriteString(wrapText(sub.Usage, 5+col, 5+col, width))
				continue
			}
			text := wrapText(sub.Usage, 5+col, 5+col, width)
			b.WriteString("   " + names + strings.Repeat(" ", col-len(names)+2) + strings.TrimLeft(text, " "))
		}
	}
	if flags := c.VisibleFlags(); len(flags) > 0 {
		if c.Root() == c {
			section("GLOBAL OPTIONS")
		} else {
			section("OPTIONS")
		}
		for _, g := range flagGroups(flags) {
			if g.category != "" {
				b.WriteString("\n")
				b.WriteString(wrapText(g.category+":", 3, 5, width))
			}
			for _, f := range g.flags {
				b.WriteString(wrapText(flagHead(f), 3, 7, width))
				b.WriteString(wrapText(flagBody(f), 7, 7, width))
			}
		}
	}
	return b.String()
}

// paragraphs splits a description at blank lines and, inside a paragraph,
// joins the lines that only continue a sentence; a line that is indented
// or starts a list item or a command stays a line of its own.
func paragraphs(text string) [][]string {
	var out [][]string
	for _, p := range strings.Split(strings.TrimSpace(text), "\n\n") {
		var lines []string
		for _, line := range strings.Split(p, "\n") {
			line = strings.TrimRight(line, " ")
			if len(lines) == 0 || ownLine(line) || ownLine(lines[len(lines)-1]) && strings.HasPrefix(lines[len(lines)-1], " ") {
				lines = append(lines, line)
				continue
			}
			lines[len(lines)-1] += " " + line
		}
		out = append(out, lines)
	}
	return out
}

func ownLine(line string) bool {
	t := strings.TrimLeft(line, " ")
	return t != line || strings.HasPrefix(t, "- ") || strings.HasPrefix(t, "* ") || strings.HasPrefix(t, "$ ")
}

// hang is how far the continuation lines of a description's line are
// indented past its first: under a list item's text, or under a command.
func hang(line string) int {
	t := strings.TrimLeft(line, " ")
	switch {
	case strings.HasPrefix(t, "- ") || strings.HasPrefix(t, "* "):
		return 2
	case ownLine(line):
		return 4
	}
	return 0
}

// wrapText breaks text into lines of at most width columns: the first
// indented by first spaces, the others by rest. A word longer than a line
// is cut, so that no line is wider than width.
func wrapText(text string, first, rest, width int) string {
	var b strings.Builder
	indent, col := first, 0
	newLine := func() {
		if col > 0 {
			b.WriteString("\n")
		}
		indent, col = rest, 0
	}
	for _, word := range strings.Fields(text) {
		for {
			n := utf8.RuneCountInString(word)
			room := width - indent
			switch {
			case col == 0 && n <= room:
				b.WriteString(strings.Repeat(" ", indent) + word)
				col = indent + n
			case col > 0 && col+1+n <= width:
				b.WriteString(" " + word)
				col += 1 + n
			case col > 0:
				newLine()
				continue
			default:
				cut := []rune(word)[:max(room, 1)]
				b.WriteString(strings.Repeat(" ", indent) + string(cut))
				col = indent + len(cut)
				word = string([]rune(word)[len(cut):])
				newLine()
				continue
			}
			break
		}
	}
	if col > 0 || b.Len() == 0 {
		b.WriteString("\n")
	}
	return b.String()
}

type flagGroup struct {
	category string
	flags    []cli.Flag
}

// flagGroups keeps the flags of no category first, then each category in
// the order its first flag appears.
func flagGroups(flags []cli.Flag) []flagGroup {
	groups := []flagGroup{{}}
	at := map[string]int{"": 0}
	for _, f := range flags {
		cat := ""
		if c, ok := f.(cli.CategorizableFlag); ok {
			cat = c.GetCategory()
		}
		i, ok := at[cat]
		if !ok {
			i = len(groups)
			at[cat] = i
			groups = append(groups, flagGroup{category: cat})
		}
		groups[i].flags = append(groups[i].flags, f)
	}
	if len(groups[0].flags) == 0 {
		groups = groups[1:]
	}
	return groups
}

// flagHead is a flag's names and the word its value is called by.
func flagHead(f cli.Flag) string {
	var names []string
	for _, n := range f.Names() {
		if len(n) == 1 {
			names = append(names, "-"+n)
		} else {
			names = append(names, "--"+n)
		}
	}
	head := strings.Join(names, ", ")
	if p := flagPlaceholder(f); p != "" {
		head += " " + p
	}
	return head
}

// flagPlaceholder is the word between backquotes in a flag's usage, or a
// word for its kind; "" for a flag that takes no value.
func flagPlaceholder(f cli.Flag) string {
	d, ok := f.(cli.DocGenerationFlag)
	if !ok || !d.TakesValue() {
		return ""
	}
	if p, _ := unquoteUsage(d.GetUsage()); p != "" {
		return p
	}
	switch f.(type) {
	case *cli.IntFlag, *cli.Int64Flag, *cli.UintFlag:
		return "N"
	case *cli.DurationFlag:
		return "DURATION"
	}
	return "VALUE"
}

// flagBody is a flag's usage, then its default, then the environment
// variables it is read from.
func flagBody(f cli.Flag) string {
	d, ok := f.(cli.DocGenerationFlag)
	if !ok {
		return ""
	}
	_, usage := unquoteUsage(d.GetUsage())
	var env []string
	if i := strings.LastIndex(usage, " [$"); i >= 0 && strings.HasSuffix(usage, "]") {
		for _, v := range strings.Split(usage[i+2:len(usage)-1], ",") {
			env = append(env, strings.TrimSpace(v))
		}
		usage = usage[:i]
	}
	for _, v := range d.GetEnvVars() {
		env = append(env, "$"+v)
	}
	if m, ok := f.(cli.DocGenerationMultiValueFlag); ok && m.IsMultiValueFlag() && !strings.Contains(usage, "(repeatable)") {
		usage += " (repeatable)"
	}
	if def := flagDefault(f); def != "" {
		usage += " (default: " + def + ")"
	}
	if len(env) > 0 {
		usage += " [" + strings.Join(env, ", ") + "]"
	}
	return usage
}

// flagDefault is what a flag is when it is not given: its DefaultText, or
// its value when that is not empty. A number's zero is a default like
// any other; a flag whose zero means "none" says so in its DefaultText.
func flagDefault(f cli.Flag) string {
	d, ok := f.(cli.DocGenerationFlag)
	if !ok || !d.TakesValue() {
		return ""
	}
	if v, ok := f.(interface{ IsDefaultVisible() bool }); ok && !v.IsDefaultVisible() {
		return ""
	}
	if t := d.GetDefaultText(); t != "" {
		return t
	}
	if m, ok := f.(cli.DocGenerationMultiValueFlag); ok && m.IsMultiValueFlag() && zeroValue(f) {
		return ""
	}
	v := d.GetValue()
	if u, err := strconv.Unquote(v); err == nil {
		v = u
	}
	return v
}

// zeroValue says whether a flag's Value field is its type's zero.
func zeroValue(f cli.Flag) bool {
	v := reflect.ValueOf(f)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return true
	}
	val := v.Elem().FieldByName("Value")
	return !val.IsValid() || val.IsZero()
}

// unquoteUsage is the flag library's rule for a placeholder: the first
// word between backquotes, which stays in the text without them.
func unquoteUsage(usage string) (string, string) {
	i := strings.IndexByte(usage, '`')
	if i < 0 {
		return "", usage
	}
	j := strings.IndexByte(usage[i+1:], '`')
	if j < 0 {
		return "", usage
	}
	name := usage[i+1 : i+1+j]
	return name, usage[:i] + name + usage[i+2+j:]
}
