package main

import (
	"bytes"
	"fmt"
	"go/build"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/rogpeppe/go-internal/testscript"
)

// The README's commands run as written. Each command of a ```sh block and
// each command its prose spells out in `backticks` is claimed below by
// what runs or checks it; a command nothing claims fails
// TestReadmeCommands, and so does a placeholder readmePlaceholders does
// not know, so a new example cannot slip in untested.

// readmePlaceholder is a word of a README command that a user replaces
// (or a file the user must have), and what a test puts there.
type readmePlaceholder struct {
	means string
	// value replaces the word in the command the script runs: a literal,
	// or a shell variable the script sets (with dirname) before it runs
	// the command. None for a word only commands whose --help is checked
	// have.
	value string
}

var readmePlaceholders = map[string]readmePlaceholder{
	"W":             {"the workspace of harness run", "ws"},
	"<run-id>":      {"the id of the run the README's harness run made", "$RUN_ID"},
	"<id>":          {"the id of the pipeline or batch the README's run line made (it prints it at its end)", "$ID"},
	"IMG":           {"the harness image a cluster pulls", "registry.example/harness:1.4.0"},
	"RUN":           {"a run: its directory", ".harness/runs/$RUN_ID"},
	"DIR":           {"a run, pipeline or batch directory", ".harness/runs/$RUN_ID"},
	"TEXT":          {"a prompt", "'Now in one line.'"},
	"URL":           {"another endpoint", "$MODEL_URL"},
	"CALL_ID":       {"the id of a tool call waiting for a person", ""},
	"pipeline.yaml": {"the README's ```yaml pipeline block", "pipeline.yaml"},
	"triage.yaml":   {"a batch file as the README's Batches section describes it, made by readme_batches.txtar", "triage.yaml"},
	"harness.yaml":  {"the README's ```yaml config block", "harness.yaml"},
}

// readmeClaims say what runs each command of the README's sh blocks, by
// its first words (the longest key that matches). A script claims a
// prefix by naming it, quoted exactly so, in the readme, readme-task or
// docblock command that runs the lines that start so; a new line needs a
// key here, and so a script that runs it.
var readmeClaims = map[string]string{
	"harness run ":                                       "script:readme_usage",
	"harness reflect ":                                   "script:readme_usage",
	"go tool task demo":                                  "script:readme_demo",
	"go tool task demo:reflect":                          "script:readme_demo",
	"go tool task demo:pipeline":                         "script:readme_pipelines",
	"go tool task demo:eval":                             "script:readme_eval",
	"harness pipeline run ":                              "script:readme_pipelines",
	"harness pipeline resume ":                           "script:readme_pipelines",
	"harness pipeline check ":                            "script:readme_pipelines",
	"harness batch run triage.yaml --jobs":               "script:readme_batches",
	"harness batch run triage.yaml --id nightly --shard": "script:readme_batches",
	"harness batch merge ":                               "script:readme_batches",
	"harness batch resume ":                              "script:readme_batches",
	"harness batch k8s ":                                 "script:readme_batches",
	"harness skills ":                                    "script:readme_skills_from_git",
	"go tool task ci":                                    "task: what CI runs; TestReadmeTasks checks the Taskfile has it",
	"go install ":                                        "install: TestReadmeInstall checks the packages are this module's commands",
	"apt-get install bubblewrap":                         "install: TestReadmeInstall checks the package is the one the tools task installs",
}

// readmeProse say what runs or checks each command the README's prose
// spells out. "script:NAME" runs it as written (with placeholders
// filled); "help" (a command's name or synopsis in a sentence) checks
// that the command exists and has each flag it names (TestReadmeHelp);
// "task" that `go tool task --list` has the task (TestReadmeTasks).
var readmeProse = map[string]string{
	"harness --version":                    "script:readme_usage",
	"harness runs":                         "script:readme_usage",
	"harness show RUN":                     "script:readme_usage",
	"harness report DIR":                   "script:readme_usage",
	"harness continue RUN --prompt TEXT":   "script:readme_usage",
	"harness pipeline run --help":          "script:readme_pipelines",
	"harness resume RUN --base-url URL":    "help",
	"harness resume RUN --approve CALL_ID": "help",
	"harness run":                          "help",
	"harness resume":                       "help",
	"harness reflect":                      "help",
	"harness run --reflect":                "help",
	"harness eval --min-pass-rate":         "help",
	"harness eval":                         "help",
	"harness pipeline k8s":                 "help",
	"harness skills index":                 "help",
	"harness schedule list|k8s|github":     "help",
	"go tool task --list":                  "task",
	"go tool task build":                   "task",
	"go tool task test":                    "task",
	"go tool task ci":                      "task",
	"go tool task demo":                    "task",
	"go tool task fuzz":                    "task",
	".ci/run":                              "task",
}

// readmeCommand is one command of the README: a line of a sh block (with
// the lines it continues onto with a backslash), or a `code span` of its
// prose.
type readmeCommand struct {
	line  int
	text  string // as written
	prose bool
}

func (c readmeCommand) String() string { return fmt.Sprintf("README.md:%d: %s", c.line, c.words()) }

// words is the command without its trailing comment.
func (c readmeCommand) words() string {
	t := strings.ReplaceAll(c.text, "\\\n", " ")
	if i := regexp.MustCompile(`\s#\s`).FindStringIndex(t); i != nil {
		t = t[:i[0]]
	}
	return strings.Join(strings.Fields(t), " ")
}

var (
	readmeSpan    = regexp.MustCompile("`([^`]+)`")
	readmeProseOf = regexp.MustCompile(`^(harness |go tool task|\.ci/run|go install|apt-get)`)
	// Words a user replaces: <like-this>, ALL CAPS, and the files a
	// command reads that the user must have.
	readmePlaceholderWord = regexp.MustCompile(`<[a-z-]+>|\b[A-Z][A-Z_]*\b|[\w.-]+\.(?:ya?ml|jsonl?)\b`)
	readmeQuoted          = regexp.MustCompile(`"[^"]*"|'[^']*'`)
)

func readmeCommands(readme string) ([]readmeCommand, error) {
	blocks, err := fencedBlocks(readme)
	if err != nil {
		return nil, err
	}
	var out []readmeCommand
	for _, b := range blocks {
		if b.info != "sh" {
			continue
		}
		lines := strings.SplitAfter(strings.TrimSuffix(b.body, "\n"), "\n")
		for i := 0; i < len(lines); i++ {
			c := readmeCommand{line: b.line + 1 + i, text: lines[i]}
			for strings.HasSuffix(strings.TrimRight(c.text, "\n"), "\\") && i+1 < len(lines) {
				i++
				c.text += lines[i]
			}
			c.text = strings.TrimRight(c.text, "\n")
			// A line that is only a comment is no command.
			if c.words() != "" && !strings.HasPrefix(c.words(), "#") {
				out = append(out, c)
			}
		}
	}
	raw, err := os.ReadFile(readme)
	if err != nil {
		return nil, err
	}
	inBlock := false
	for n, l := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(l, "```") {
			inBlock = !inBlock
			continue
		}
		if inBlock {
			continue
		}
		for _, m := range readmeSpan.FindAllStringSubmatch(l, -1) {
			if readmeProseOf.MatchString(m[1]) {
				out = append(out, readmeCommand{line: n + 1, text: m[1], prose: true})
			}
		}
	}
	return out, nil
}

// placeholders are the words of a command a user replaces, outside its
// quoted strings and its comment.
func (c readmeCommand) placeholders() []string {
	return readmePlaceholderWord.FindAllString(readmeQuoted.ReplaceAllString(c.words(), `""`), -1)
}

// filled is the command as a script runs it: each placeholder replaced
// by its value.
func (c readmeCommand) filled() (string, error) {
	t := c.text
	for _, p := range c.placeholders() {
		v, ok := readmePlaceholders[p]
		if !ok {
			return "", fmt.Errorf("%s: %q is a placeholder readmePlaceholders does not know", c, p)
		}
		if v.value == "" {
			return "", fmt.Errorf("%s: %q (%s) has no value a test can put there", c, p, v.means)
		}
		t = regexp.MustCompile(`(^|[\s/])`+regexp.QuoteMeta(p)+`($|[\s/-])`).ReplaceAllString(t, "${1}"+strings.ReplaceAll(v.value, "$", "$$")+"${2}")
	}
	return t, nil
}

// claim is what runs or checks the command, and the key it is claimed by.
func (c readmeCommand) claim() (how, key string) {
	if c.prose {
		return readmeProse[c.text], c.text
	}
	w := c.words() + " "
	for p := range readmeClaims {
		// A key ends a word: "go tool task demo" is not a prefix of
		// "go tool task demo:reflect".
		if strings.HasPrefix(w, p) && (strings.HasSuffix(p, " ") || w[len(p)] == ' ') && len(p) > len(key) {
			key = p
		}
	}
	return readmeClaims[key], key
}

// Every command of the README is claimed by a script that runs it or a
// check, and each placeholder in it is one a test knows.
func TestReadmeCommands(t *testing.T) {
	cmds, err := readmeCommands("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var sh, prose int
	for _, c := range cmds {
		if c.prose {
			prose++
		} else {
			sh++
		}
		for _, p := range c.placeholders() {
			if _, ok := readmePlaceholders[p]; !ok {
				t.Errorf("%s: %q is a placeholder readmePlaceholders does not know", c, p)
			}
		}
		claim, key := c.claim()
		if claim == "" {
			t.Errorf("%s: nothing runs this command: add it to readmeClaims or readmeProse with the test that runs it", c)
			continue
		}
		if script, ok := strings.CutPrefix(claim, "script:"); ok {
			b, err := os.ReadFile(filepath.Join("../../testdata/script", script+".txtar"))
			if err != nil {
				t.Errorf("%s: %v", c, err)
				continue
			}
			if !strings.Contains(string(b), "'"+key+"'") {
				t.Errorf("%s: %s.txtar does not run it (no readme, readme-task or docblock line names '%s')", c, script, key)
			}
			if c.prose {
				if _, err := c.filled(); err != nil {
					t.Error(err)
				}
			}
		}
	}
	// Nor does the table keep a placeholder no command has.
	for p := range readmePlaceholders {
		if !slices.ContainsFunc(cmds, func(c readmeCommand) bool { return slices.Contains(c.placeholders(), p) }) {
			t.Errorf("readmePlaceholders has %q, which no command of the README has", p)
		}
	}
	if sh < 20 || prose < 20 {
		t.Fatalf("found %d commands in sh blocks and %d in prose: is the test reading the README?", sh, prose)
	}
}

// The commands the README names in its prose exist, with each flag it
// gives them.
func TestReadmeHelp(t *testing.T) {
	cmds, err := readmeCommands("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cmds {
		if !c.prose || !strings.HasPrefix(c.text, "harness ") || readmeProse[c.text] != "help" {
			continue
		}
		fields := strings.Fields(c.text)[1:]
		var words, flags []string
		for _, f := range fields {
			switch {
			case strings.HasPrefix(f, "--"):
				flags = append(flags, f)
			case len(flags) == 0 && strings.ToLower(f) == f:
				words = append(words, f)
			}
		}
		// `schedule list|k8s|github` names three commands.
		var alts [][]string
		if n := len(words); n > 0 && strings.Contains(words[n-1], "|") {
			for _, a := range strings.Split(words[n-1], "|") {
				alts = append(alts, append(slices.Clone(words[:n-1]), a))
			}
		} else {
			alts = [][]string{words}
		}
		for _, w := range alts {
			var stdout, stderr bytes.Buffer
			args := append(append([]string{"harness"}, w...), "--help")
			if code := Main(args, strings.NewReader(""), &stdout, &stderr); code != 0 {
				t.Errorf("%s: %s exited %d: %s", c, strings.Join(args, " "), code, stderr.String())
				continue
			}
			for _, f := range flags {
				if !strings.Contains(stdout.String(), f+" ") && !strings.Contains(stdout.String(), f+"\n") {
					t.Errorf("%s: harness %s has no flag %s", c, strings.Join(w, " "), f)
				}
			}
		}
	}
}

// Every task the README names is one `go tool task --list` lists, and the
// everyday tasks the Development section enumerates are there too.
// .ci/run runs exactly `go tool task ci`.
func TestReadmeTasks(t *testing.T) {
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]bool{}
	for _, m := range regexp.MustCompile("go tool task ([a-z][a-z:-]*)").FindAllStringSubmatch(string(raw), -1) {
		named[m[1]] = true
	}
	_, list, ok := strings.Cut(string(raw), "`go tool task --list` shows the everyday tasks: ")
	if !ok {
		t.Fatal("the README no longer lists the everyday tasks after `go tool task --list`")
	}
	list, _, _ = strings.Cut(list, ".")
	for _, m := range readmeSpan.FindAllStringSubmatch(list, -1) {
		named[m[1]] = true
	}
	cmd := exec.Command("go", "tool", "task", "--list")
	cmd.Dir = "../.."
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go tool task --list: %v\n%s", err, out)
	}
	listed := map[string]bool{}
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(l), "* ")); len(f) > 0 {
			listed[strings.TrimSuffix(f[0], ":")] = true
		}
	}
	for name := range named {
		if !listed[name] {
			t.Errorf("the README names `go tool task %s`, which go tool task --list does not list:\n%s", name, out)
		}
	}
	if len(named) < 9 {
		t.Errorf("found only the tasks %v in the README", slices.Sorted(mapKeys(named)))
	}
	// `go tool task build` puts the two programs of the install line in
	// bin/.
	tf, err := os.ReadFile("../../Taskfile.yml")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{" -o bin/harness ./cmd/harness\n", " -o bin/harness-sandbox ./cmd/harness-sandbox\n"} {
		if !strings.Contains(string(tf), want) {
			t.Errorf("the build task does not run %q, as the README says it does", strings.TrimSpace(want))
		}
	}
	run, err := os.ReadFile("../../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^(exec )?go tool task ci$`).Match(run) {
		t.Errorf(".ci/run does not run `go tool task ci`:\n%s", run)
	}
}

// The install lines cannot run offline: what they name is checked
// instead. go install's packages are this module's commands; apt-get's
// package is the one the tools task installs for bwrap.
func TestReadmeInstall(t *testing.T) {
	cmds, err := readmeCommands("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	module := strings.TrimSpace(strings.TrimPrefix(strings.SplitN(string(gomod), "\n", 2)[0], "module "))
	seen := 0
	for _, c := range cmds {
		switch w := strings.Fields(c.words()); {
		case c.prose:
		case len(w) > 2 && w[0] == "go" && w[1] == "install":
			seen++
			for _, pkg := range w[2:] {
				path, version, _ := strings.Cut(pkg, "@")
				rel, ok := strings.CutPrefix(path, module+"/")
				if !ok || version != "latest" {
					t.Errorf("%s: %s is not a package of %s at @latest", c, pkg, module)
					continue
				}
				if p, err := build.ImportDir(filepath.Join("../..", rel), 0); err != nil || p.Name != "main" {
					t.Errorf("%s: %s is not a command of this module (%v)", c, rel, err)
				}
			}
		case len(w) > 2 && w[0] == "apt-get" && w[1] == "install":
			seen++
			tools, err := os.ReadFile("../../.ci/install-tools")
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range w[2:] {
				if !strings.Contains(string(tools), "need_apt+=("+p+")") {
					t.Errorf("%s: the tools task does not install the apt package %s", c, p)
				}
			}
		}
	}
	if seen != 2 {
		t.Errorf("found %d install lines in the README, want the go install and the apt-get one", seen)
	}
}

// cmdReadme writes the README's commands that start with PREFIX (a sh
// block's lines, or with -prose the `spans` of its text that are exactly
// PREFIX) into DEST, one a line, each placeholder replaced by what
// readmePlaceholders says:
//
//	readme 'harness batch ' batch.sh
//	readme -prose 'harness --version' version.sh
func cmdReadme(ts *testscript.TestScript, neg bool, args []string) {
	prose := len(args) == 3 && args[0] == "-prose"
	if prose {
		args = args[1:]
	}
	if neg || len(args) != 2 {
		ts.Fatalf("usage: readme [-prose] PREFIX DEST")
	}
	cmds, err := readmeCommands("../../README.md")
	ts.Check(err)
	var out strings.Builder
	for _, c := range cmds {
		if c.prose != prose || prose && c.text != args[0] || !prose && !strings.HasPrefix(c.words()+" ", args[0]) {
			continue
		}
		t, err := c.filled()
		ts.Check(err)
		// The log names the README line a failure comes from.
		ts.Logf("%s\n  runs as: %s", c, strings.ReplaceAll(t, "\\\n", ""))
		out.WriteString(t + "\n")
	}
	if out.Len() == 0 {
		ts.Fatalf("readme: no command of README.md starts with %q", args[0])
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(out.String()), 0o644))
}

// cmdReadmeTask writes into DEST what `go tool task NAME` runs, for a
// task that runs a script of examples/ with the harness it builds: the
// task's directory is copied into the work tree (so the run leaves the
// source tree alone) and the script is given the harness under test (the
// test binary, on the script's PATH) for ../../bin/harness. The README
// must have the line.
//
//	readme-task 'go tool task demo' demo.sh
func cmdReadmeTask(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: readme-task 'go tool task NAME' DEST")
	}
	cmds, err := readmeCommands("../../README.md")
	ts.Check(err)
	if !slices.ContainsFunc(cmds, func(c readmeCommand) bool { return !c.prose && c.words() == args[0] }) {
		ts.Fatalf("readme-task: README.md has no line `%s`", args[0])
	}
	args[0] = strings.TrimPrefix(args[0], "go tool task ")
	raw, err := os.ReadFile("../../Taskfile.yml")
	ts.Check(err)
	var tf struct {
		Tasks map[string]struct {
			Deps []string `yaml:"deps"`
			Dir  string   `yaml:"dir"`
			Cmds []any    `yaml:"cmds"`
		} `yaml:"tasks"`
	}
	ts.Check(yaml.Unmarshal(raw, &tf))
	task, ok := tf.Tasks[args[0]]
	if !ok {
		ts.Fatalf("readme-task: Taskfile.yml has no task %s", args[0])
	}
	if !slices.Equal(task.Deps, []string{"build"}) || !strings.HasPrefix(task.Dir, "examples/") {
		ts.Fatalf("readme-task: task %s is not one that builds harness and runs a script of examples/ (deps %v, dir %q)", args[0], task.Deps, task.Dir)
	}
	// A second task of the same example runs in the copy the first made,
	// as it would in a clone.
	if _, err := os.Stat(ts.MkAbs(task.Dir)); err != nil {
		ts.Check(os.CopyFS(ts.MkAbs(task.Dir), os.DirFS(filepath.Join("../..", task.Dir))))
	}
	script := "cd " + task.Dir + "\n"
	for _, cmd := range task.Cmds {
		c, _ := cmd.(string)
		if !strings.Contains(c, "../../bin/harness") {
			ts.Fatalf("readme-task: task %s runs %q, not the harness it builds", args[0], c)
		}
		script += strings.ReplaceAll(c, "../../bin/harness", "harness") + "\n"
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(script), 0o644))
}

// cmdDirName sets VAR to the name of the one directory in DIR (the id of
// the run, pipeline or batch a command made), for the placeholders that
// stand for it:
//
//	dirname RUN_ID .harness/runs
func cmdDirName(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: dirname VAR DIR")
	}
	entries, err := os.ReadDir(ts.MkAbs(args[1]))
	ts.Check(err)
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	if len(names) != 1 {
		ts.Fatalf("dirname: %s holds %v, want one directory", args[1], names)
	}
	ts.Setenv(args[0], names[0])
}
