package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/grant"
	"github.com/harness-dev/harness/internal/docschema"
	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/scripts"
	"github.com/harness-dev/harness/tools"
	"github.com/harness-dev/harness/workspace"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Kind names what a check checks, as gradings record it.
func (c Check) Kind() string {
	switch {
	case c.AnswerEquals != nil:
		return "answer-equals"
	case c.AnswerContains != nil:
		return "answer-contains"
	case c.AnswerMatches != nil:
		return "answer-matches"
	case c.AnswerSchema != "":
		return "answer-schema"
	case c.File != "" && c.Exists != nil:
		return "file-exists"
	case c.File != "" && c.Contains != nil:
		return "file-contains"
	case c.File != "" && c.Matches != nil:
		return "file-matches"
	case c.File != "" && c.Schema != "":
		return "file-schema"
	case c.Command != nil:
		return "command"
	case c.ToolCalled != "":
		return "tool-called"
	case c.ToolNotCalled != "":
		return "tool-not-called"
	case c.SkillLoaded != "":
		return "skill-loaded"
	case c.MaxTurns != nil:
		return "max-turns"
	case c.MaxTokens != nil:
		return "max-tokens"
	case c.MaxCost != nil:
		return "max-cost"
	}
	return "unknown"
}

// Text is the check said in words: the text its graded item carries.
func (c Check) Text() string {
	switch c.Kind() {
	case "answer-equals":
		return fmt.Sprintf("the answer is %q", *c.AnswerEquals)
	case "answer-contains":
		return fmt.Sprintf("the answer contains %q", *c.AnswerContains)
	case "answer-matches":
		return fmt.Sprintf("the answer matches /%s/", *c.AnswerMatches)
	case "answer-schema":
		return fmt.Sprintf("the answer is JSON valid against %s", c.AnswerSchema)
	case "file-exists":
		if *c.Exists {
			return fmt.Sprintf("%s exists", c.File)
		}
		return fmt.Sprintf("%s does not exist", c.File)
	case "file-contains":
		return fmt.Sprintf("%s contains %q", c.File, *c.Contains)
	case "file-matches":
		return fmt.Sprintf("%s matches /%s/", c.File, *c.Matches)
	case "file-schema":
		return fmt.Sprintf("%s is JSON valid against %s", c.File, c.Schema)
	case "command":
		return fmt.Sprintf("`%s` exits 0", strings.Join(c.Command, " "))
	case "tool-called":
		return fmt.Sprintf("the model called %s", c.ToolCalled)
	case "tool-not-called":
		return fmt.Sprintf("the model did not call %s", c.ToolNotCalled)
	case "skill-loaded":
		return fmt.Sprintf("skill %s was loaded", c.SkillLoaded)
	case "max-turns":
		return fmt.Sprintf("at most %d turns", *c.MaxTurns)
	case "max-tokens":
		return fmt.Sprintf("at most %d tokens", *c.MaxTokens)
	case "max-cost":
		return fmt.Sprintf("at most $%g", *c.MaxCost)
	}
	return "unknown check"
}

// maxCheckedFile bounds what a file check reads of a workspace file.
const maxCheckedFile = 16 << 20

// CommandEnv is what a command check runs with: run_command's own rules,
// as the eval's operator gave them.
type CommandEnv struct {
	// probe is the sandbox found for the first command check, which every
	// later one runs in: probing starts a sandbox.
	probe struct {
		sync.Once
		helper  string
		backend scripts.Backend
		err     error
	}

	Patterns    []tools.CommandPattern
	Grant       map[string]any
	Sandbox     string
	MemoryLimit uint64
	Cache       string
	// RecordDir receives command-executions.json of the checks.
	RecordDir string
	Redact    *artifacts.Redactor
	Now       func() time.Time
}

// cellView is what the checks of one cell see: its run as it ended, from
// its verified run directory, and its workspace after it.
type cellView struct {
	run       record.EvalRun
	workspace string
	cellID    string
}

// runCheck decides one check. Nothing here asks a model; a check that
// cannot be decided (its file unreadable, its command refused) fails with
// the reason as evidence.
func runCheck(ctx context.Context, c Check, v cellView, env *CommandEnv) record.GradedItem {
	it := record.GradedItem{Text: c.Text(), Kind: c.Kind()}
	pass, evidence := decide(ctx, c, v, env)
	it.Passed, it.Evidence = pass, evidence
	it.Status = record.GradeFailed
	if pass {
		it.Status = record.GradePassed
	}
	return it
}

func decide(ctx context.Context, c Check, v cellView, env *CommandEnv) (bool, string) {
	answer := v.run.Answer
	switch c.Kind() {
	case "answer-equals":
		ok := strings.TrimSpace(answer) == strings.TrimSpace(*c.AnswerEquals)
		return ok, quoteEvidence("the answer", answer, ok)
	case "answer-contains":
		ok := strings.Contains(answer, *c.AnswerContains)
		return ok, quoteEvidence("the answer", answer, ok)
	case "answer-matches":
		ok := regexp.MustCompile(*c.AnswerMatches).MatchString(answer) // compiled at load
		return ok, quoteEvidence("the answer", answer, ok)
	case "answer-schema":
		return schemaValid(c.schemaBytes, []byte(answer), "the answer")
	case "file-exists", "file-contains", "file-matches", "file-schema":
		return fileCheck(c, v.workspace)
	case "command":
		return commandCheck(ctx, c, v, env)
	case "tool-called":
		n := v.run.ToolCalls[c.ToolCalled]
		return n > 0, fmt.Sprintf("%s was called %d times", c.ToolCalled, n)
	case "tool-not-called":
		n := v.run.ToolCalls[c.ToolNotCalled]
		return n == 0, fmt.Sprintf("%s was called %d times", c.ToolNotCalled, n)
	case "skill-loaded":
		ok := slices.Contains(v.run.Loaded, c.SkillLoaded)
		return ok, fmt.Sprintf("skills loaded: %s", orNone(v.run.Loaded))
	case "max-turns":
		return v.run.Turns <= *c.MaxTurns, fmt.Sprintf("%d turns", v.run.Turns)
	case "max-tokens":
		return v.run.Tokens <= *c.MaxTokens, fmt.Sprintf("%d tokens", v.run.Tokens)
	case "max-cost":
		if v.run.CostUSD == nil {
			return false, "the run's cost is not known (no --price for its model)"
		}
		return *v.run.CostUSD <= *c.MaxCost, fmt.Sprintf("$%.6f", *v.run.CostUSD)
	}
	return false, "not a check harness knows"
}

func orNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}

// quoteEvidence shows what was checked, cut to a length a report can hold.
func quoteEvidence(what, text string, ok bool) string {
	const max = 300
	if len(text) > max {
		text = text[:max] + "…"
	}
	if ok {
		return fmt.Sprintf("%s: %q", what, text)
	}
	return fmt.Sprintf("%s was %q", what, text)
}

func schemaValid(schema, data []byte, what string) (bool, string) {
	sch, err := docschema.Compile("check.schema.json", schema)
	if err != nil {
		return false, fmt.Sprintf("the schema does not compile: %v", err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return false, fmt.Sprintf("%s is not JSON: %v", what, err)
	}
	if err := sch.Validate(doc); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return false, fmt.Sprintf("%s does not match: %s", what, strings.Join(docschema.Problems(ve), "; "))
		}
		return false, err.Error()
	}
	return true, what + " matches the schema"
}

// fileCheck reads a workspace file beneath the cell's workspace without
// following a link out of it: the model wrote that directory.
func fileCheck(c Check, ws string) (bool, string) {
	if c.Kind() == "file-exists" {
		// Whether it is there, not what it holds: a file too big to
		// read still exists.
		f, fi, err := openBeneath(ws, c.File)
		if err == nil {
			f.Close()
			if !fi.Mode().IsRegular() {
				err = artifacts.ErrNotRegular
			}
		}
		exists := err == nil
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, fmt.Sprintf("%s cannot be read: %v", c.File, err)
		}
		return exists == *c.Exists, fmt.Sprintf("%s exists: %v", c.File, exists)
	}
	data, err := readBeneath(ws, c.File)
	if err != nil {
		return false, fmt.Sprintf("%s cannot be read: %v", c.File, err)
	}
	switch c.Kind() {
	case "file-contains":
		ok := bytes.Contains(data, []byte(*c.Contains))
		return ok, quoteEvidence(c.File, string(data), ok)
	case "file-matches":
		ok := regexp.MustCompile(*c.Matches).Match(data)
		return ok, quoteEvidence(c.File, string(data), ok)
	}
	return schemaValid(c.schemaBytes, data, c.File)
}

// openBeneath opens name beneath dir, following links only while they
// stay beneath it. O_NONBLOCK lets the open return at once whatever the
// file is (a FIFO would wait for a writer); the descriptor then says
// what it opened.
func openBeneath(dir, name string) (*os.File, fs.FileInfo, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, nil, err
	}
	defer root.Close()
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

func readBeneath(dir, name string) ([]byte, error) {
	return readBeneathAtMost(dir, name, maxCheckedFile)
}

// readBeneathAtMost reads a regular file beneath dir of at most max
// bytes, counted on the descriptor and again while reading.
func readBeneathAtMost(dir, name string, max int64) ([]byte, error) {
	f, fi, err := openBeneath(dir, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if !fi.Mode().IsRegular() {
		return nil, artifacts.ErrNotRegular
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("%d bytes, over the %d MiB a check reads", fi.Size(), max>>20)
	}
	return artifacts.ReadAtMost(f, max)
}

// commandCheck runs the check's argv through run_command itself, with the
// eval's --allow-command patterns and --command-grant: a check runs
// nothing a run of the eval could not.
func commandCheck(ctx context.Context, c Check, v cellView, env *CommandEnv) (bool, string) {
	if env == nil || len(env.Patterns) == 0 {
		return false, "command checks need --allow-command patterns that allow them; none were given, so nothing was run"
	}
	ws, err := workspace.Open(v.workspace, workspace.DefaultSandbox, "", nil)
	if err != nil {
		return false, fmt.Sprintf("the cell's workspace: %v", err)
	}
	helper, backend, probe := env.sandbox(ctx)
	git, err := grant.ScanGit(ctx, v.workspace, nil, nil)
	if err != nil {
		return false, fmt.Sprintf("the cell's workspace: %v", err)
	}
	now := env.Now
	if now == nil {
		now = time.Now
	}
	redact := env.Redact
	if redact == nil {
		redact = artifacts.NewRedactor()
	}
	if err := os.MkdirAll(env.RecordDir, 0o755); err != nil {
		return false, err.Error()
	}
	t := tools.NewCommandTool(tools.Commands{Workspace: ws, Patterns: env.Patterns, Backend: backend, Probe: probe, Helper: helper,
		RunID: v.cellID, Now: now, RunDir: env.RecordDir, Redact: redact, MemoryLimit: env.MemoryLimit, Cache: env.Cache,
		Grant: env.Grant, Lookup: func(string) (string, bool) { return "", false }, Network: &tools.Network{RunDir: env.RecordDir, Redact: redact}, Git: git})
	args, _ := json.Marshal(map[string]any{"argv": c.Command})
	res, err := t.Call(ctx, loop.ToolCall{ID: "check-" + v.cellID, Name: tools.CommandToolName}, args)
	if err != nil {
		return false, fmt.Sprintf("the command could not be run: %v", err)
	}
	if res.Status != loop.StatusOK {
		return false, "refused: " + res.Content
	}
	var out struct {
		ExitCode int    `json:"exitCode"`
		Status   string `json:"status"`
		Stdout   string `json:"stdout"`
		Stderr   string `json:"stderr"`
	}
	if err := json.Unmarshal([]byte(res.Content), &out); err != nil {
		return false, "the command's result did not parse: " + err.Error()
	}
	tail := out.Stdout + out.Stderr
	if len(tail) > 400 {
		tail = "…" + tail[len(tail)-400:]
	}
	return out.ExitCode == 0 && out.Status == "executed", "exit " + strconv.Itoa(out.ExitCode) + ": " + tail
}

// sandbox is the backend command checks run in, probed once.
func (env *CommandEnv) sandbox(ctx context.Context) (string, scripts.Backend, error) {
	p := &env.probe
	p.Do(func() {
		self, _ := os.Executable()
		p.helper = scripts.Helper(self)
		p.backend, p.err = scripts.Probe(ctx, scripts.Backend(firstNonEmpty(env.Sandbox, "auto")), p.helper)
	})
	return p.helper, p.backend, p.err
}
