package grader

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/record"
)

// graderPrompt is the grader model's system message. It lives in the
// repository, not in code, so a change to it is a reviewed diff, and its
// digest goes into every grading: two gradings are comparable only when
// they were made under the same prompt.
//
//go:embed grader.md
var graderPrompt string

// PromptDigest is the digest of the grader's prompt.
func PromptDigest() artifacts.Digest { return artifacts.DigestString(graderPrompt) }

// gradingSchema asks the server for the reply's shape where it supports
// structured output. The reply is checked as strictly either way: a
// server may ignore the schema.
const gradingSchema = `{"type":"object","properties":{"expectations":{"type":"array","items":{"type":"object","properties":{"text":{"type":"string"},"passed":{"type":"boolean"},"evidence":{"type":"string"}},"required":["text","passed","evidence"],"additionalProperties":false}}},"required":["expectations"],"additionalProperties":false}`

// Bounds on what one grading request carries: a cell's answer and files
// are the agent's, of any size, and a request over the grader's context
// window fails as surely as a grader that is down. What is cut is said so
// in the request.
const (
	maxTaskBytes      = 32 << 10
	maxAnswerBytes    = 64 << 10
	maxFileBytes      = 32 << 10
	maxFilesBytes     = 128 << 10
	maxArgumentsBytes = 2 << 10
	maxToolCallsBytes = 32 << 10
	// maxEvidenceBytes bounds what a grading records of the grader's
	// evidence, maxEchoBytes what a correction sends back of a reply that
	// could not be used, and maxProblems how many of its faults it names.
	maxEvidenceBytes = 4 << 10
	maxEchoBytes     = 16 << 10
	maxProblems      = 20
)

// defaultGraderRetries is how many more requests a reply out of shape
// gets when Grader.Retries is 0.
const defaultGraderRetries = 2

// Grader grades a cell's expectations in words with a model: one request
// per cell, every expectation at once. It holds no state between
// gradings: cells may be graded at once if Model allows it.
type Grader struct {
	// Model answers the requests: the OpenAI-compatible client, or a
	// recorder or cassette around it.
	Model loop.Model
	// Name is the grader model's name sent in each request.
	Name string
	// WireAPI is the protocol the requests go over ("" is Chat
	// Completions, loop.WireResponses the Responses API).
	WireAPI string
	// Retries is how many more requests a reply that is not a grading of
	// exactly the expectations asked gets (0 = 2; negative = none).
	Retries int
}

// ToolCall is one tool call of the graded run, as the grader is shown it.
type ToolCall struct {
	Tool      string
	Arguments string
	Status    string
}

// Input is what the grader is shown of one cell.
type Input struct {
	Task           string
	ExpectedOutput string
	// Answer is the run's final answer.
	Answer    string
	ToolCalls []ToolCall
	// Files are files of the cell's workspace after the run, by slash
	// path relative to it. A name mapped to nil is a file that was looked
	// for and not found.
	Files        map[string][]byte
	Expectations []string
}

// Error is a grading that did not happen because the grader could
// not be asked: the cell's expectations are all ungraded, and grading the
// cell again later (a resumed eval) may still succeed. Err is the model's
// error (a *loop.ProviderError, a context error).
type Error struct {
	Model string
	Err   error
}

func (e *Error) Error() string {
	return fmt.Sprintf("the grader model %q %s: %v; the cell's expectations are left ungraded, not failed: resume the eval once the grader answers, and they are graded then", e.Model, graderFailure(e.Err), e.Err)
}

// graderFailure says what became of the request: a server that turned it
// down needs a change (the key, the model's name, a server that takes no
// response schema) before a resume can succeed; one that did not answer
// may only need time.
func graderFailure(err error) string {
	var pe *loop.ProviderError
	switch {
	case errors.Is(err, context.Canceled):
		return "was interrupted"
	case errors.As(err, &pe) && pe.Status >= 400 && pe.Status < 500 && pe.Status != http.StatusRequestTimeout && pe.Status != http.StatusTooManyRequests:
		return "turned the grading request down"
	}
	return "could not be reached"
}

func (e *Error) Unwrap() error { return e.Err }

// Grade asks the grader about every expectation of in and returns one
// item per expectation, in order. An expectation the grader's replies did
// not decide is ungraded, never passed. The error is a *Error when
// the grader could not be asked (every item is then ungraded). Usage is
// the sum over the requests made.
func (g *Grader) Grade(ctx context.Context, in Input) (items []record.GradedItem, usage loop.Usage, err error) {
	asked := in.Expectations
	if len(asked) == 0 {
		return []record.GradedItem{}, usage, nil
	}
	if g.Model == nil {
		return allUngraded(asked, "no grader model was configured"), usage, &Error{Model: g.Name, Err: errors.New("no grader model")}
	}
	retries := g.Retries
	switch {
	case retries == 0:
		retries = defaultGraderRetries
	case retries < 0:
		retries = 0
	}
	msgs := []loop.Message{
		{Role: loop.RoleSystem, Content: graderPrompt},
		{Role: loop.RoleUser, Content: gradeMessage(in)},
	}
	final := make([]*decision, len(asked))
	whyNot := make([]string, len(asked))
	attempts := 0
	for {
		attempts++
		resp, err := g.Model.Complete(ctx, loop.Request{
			WireAPI:  g.WireAPI,
			Model:    g.Name,
			Messages: msgs,
			Params:   loop.Params{ResponseSchema: json.RawMessage(gradingSchema)},
		})
		if err != nil {
			return allUngraded(asked, "the grader "+graderFailure(err)+": "+err.Error()), usage, &Error{Model: g.Name, Err: err}
		}
		usage = usage.Add(resp.Usage)
		gr := readReply(resp, asked)
		if len(gr.problems) == 0 {
			final = gr.decided
			break
		}
		// A later reply answers the correction, so what it decides
		// stands over what an earlier one did.
		for i, d := range gr.decided {
			switch {
			case d != nil:
				final[i] = d
			case d == nil && final[i] == nil:
				whyNot[i] = gr.why[i]
			}
		}
		if attempts > retries {
			break
		}
		echo, cut := cutText(replyText(resp), maxEchoBytes)
		if cut {
			echo += "\n[the rest of this reply is left out]"
		}
		msgs = append(msgs,
			loop.Message{Role: loop.RoleAssistant, Content: echo},
			loop.Message{Role: loop.RoleUser, Content: correction(gr.problems, asked)})
	}
	items = make([]record.GradedItem, len(asked))
	for i, text := range asked {
		d := final[i]
		if d == nil {
			items[i] = ungraded(text, fmt.Sprintf("ungraded: the grader's replies to %d request(s) did not decide this expectation (last: %s)", attempts, whyNot[i]))
			continue
		}
		evidence, _ := cutText(d.evidence, maxEvidenceBytes)
		status := record.GradeFailed
		if d.passed {
			status = record.GradePassed
		}
		items[i] = record.GradedItem{Text: text, Passed: d.passed, Evidence: evidence, Status: status, Kind: "expectation"}
	}
	return items, usage, nil
}

func allUngraded(asked []string, why string) []record.GradedItem {
	items := make([]record.GradedItem, len(asked))
	for i, text := range asked {
		items[i] = ungraded(text, "ungraded: "+why)
	}
	return items
}

func ungraded(text, evidence string) record.GradedItem {
	evidence, _ = cutText(evidence, maxEvidenceBytes)
	return record.GradedItem{Text: text, Passed: false, Evidence: evidence, Status: record.GradeUngraded, Kind: "expectation"}
}

// replyText is what the grader said, to send back with a correction. An
// assistant message without content is refused by some servers.
func replyText(resp loop.Response) string {
	switch {
	case resp.Message.Content != "":
		return resp.Message.Content
	case resp.Refusal != "":
		return resp.Refusal
	}
	return "(an empty reply)"
}

// correction is the message that asks again after a reply that was not a
// grading of exactly the expectations asked.
func correction(problems []string, asked []string) string {
	var b strings.Builder
	b.WriteString("Your reply could not be used as a grading:\n")
	for i, p := range problems {
		if i == maxProblems {
			fmt.Fprintf(&b, "- and %d more\n", len(problems)-maxProblems)
			break
		}
		fmt.Fprintf(&b, "- %s\n", p)
	}
	fmt.Fprintf(&b, "\nReply again with one JSON object and nothing else: {\"expectations\": [...]} with exactly %d items, in this order, ", len(asked))
	b.WriteString("each with \"text\" copied exactly from this list, \"passed\" the JSON boolean true or false, and \"evidence\" a string:\n")
	writeExpectations(&b, asked)
	return b.String()
}

// gradeMessage is the request's user message: the expectations, then the
// run's data, each piece quoted (see quote) and bounded.
func gradeMessage(in Input) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Expectations (%d)\n\nGrade each of these. In your reply, copy each text exactly, as the JSON string it is here.\n\n", len(in.Expectations))
	writeExpectations(&b, in.Expectations)

	b.WriteString("\n# The task the agent was given\n\n")
	quoteCut(&b, in.Task, maxTaskBytes)

	b.WriteString("\n# The output the eval's author expected\n\n")
	if in.ExpectedOutput == "" {
		b.WriteString("(none was given)\n")
	} else {
		quoteCut(&b, in.ExpectedOutput, maxTaskBytes)
	}

	b.WriteString("\n# The agent's final answer\n\n")
	if in.Answer == "" {
		b.WriteString("(the agent gave no final answer)\n")
	} else {
		quoteCut(&b, in.Answer, maxAnswerBytes)
	}

	fmt.Fprintf(&b, "\n# The tool calls the agent made (%d, in order)\n\n", len(in.ToolCalls))
	if len(in.ToolCalls) == 0 {
		b.WriteString("(none)\n")
	} else {
		writeToolCalls(&b, in.ToolCalls)
	}

	fmt.Fprintf(&b, "\n# Files from the agent's workspace after the run (%d)\n", len(in.Files))
	if len(in.Files) == 0 {
		b.WriteString("\n(none)\n")
	}
	left := maxFilesBytes
	for _, name := range slices.Sorted(maps.Keys(in.Files)) {
		data := in.Files[name]
		fmt.Fprintf(&b, "\n## %s\n\n", jsonString(name))
		switch {
		case data == nil:
			b.WriteString("Not found in the workspace after the run.\n")
			continue
		case len(data) == 0:
			b.WriteString("An empty file (0 bytes).\n")
			continue
		case left == 0:
			fmt.Fprintf(&b, "%d bytes, not shown: the files shown already reach the limit of %d bytes for all files.\n", len(data), maxFilesBytes)
			continue
		}
		shown, cut := cutText(string(data), min(maxFileBytes, left))
		if !utf8.ValidString(shown) || strings.ContainsRune(shown, 0) {
			fmt.Fprintf(&b, "A binary file of %d bytes (%s), not shown.\n", len(data), artifacts.DigestBytes(data))
			continue
		}
		left -= len(shown)
		if cut {
			fmt.Fprintf(&b, "%d bytes; only the first %d are shown (the limit is %d bytes a file, %d for all files).\n", len(data), len(shown), maxFileBytes, maxFilesBytes)
		} else {
			fmt.Fprintf(&b, "%d bytes.\n", len(data))
		}
		quote(&b, shown)
	}
	return b.String()
}

func writeExpectations(b *strings.Builder, asked []string) {
	for i, e := range asked {
		fmt.Fprintf(b, "%d. %s\n", i+1, jsonString(e))
	}
}

// writeToolCalls quotes the tool calls, one a line, each call's arguments
// and the whole list bounded.
func writeToolCalls(b *strings.Builder, calls []ToolCall) {
	var lines strings.Builder
	shown := 0
	for i, c := range calls {
		args, cut := cutText(c.Arguments, maxArgumentsBytes)
		if cut {
			args += fmt.Sprintf(" [arguments cut: %d of %d bytes shown]", len(args), len(c.Arguments))
		}
		line := fmt.Sprintf("%d. %s (%s) %s\n", i+1, c.Tool, c.Status, args)
		if lines.Len()+len(line) > maxToolCallsBytes {
			break
		}
		lines.WriteString(line)
		shown++
	}
	if shown < len(calls) {
		fmt.Fprintf(b, "Only the first %d of %d calls are shown (the limit is %d bytes for the list).\n", shown, len(calls), maxToolCallsBytes)
	}
	quote(b, strings.TrimSuffix(lines.String(), "\n"))
}

// quoteCut quotes s, bounded to max bytes, saying so when it was cut.
func quoteCut(b *strings.Builder, s string, max int) {
	shown, cut := cutText(s, max)
	if cut {
		fmt.Fprintf(b, "%d bytes; only the first %d are shown.\n", len(s), len(shown))
	}
	quote(b, shown)
}

// quote writes data between a begin and an end line that name the same
// id, the start of the data's own digest: data can hold an end line only
// by holding its own digest, so no answer or file can end its quote early
// and go on as if it were the harness speaking. The id is derived, not
// random, so that the same cell asks the same request (a cassette replays
// it).
func quote(b *strings.Builder, data string) {
	d := string(artifacts.DigestString(data))
	id := d[strings.LastIndexByte(d, ':')+1:][:16]
	fmt.Fprintf(b, "<<<BEGIN DATA %s\n%s\nEND DATA %s>>>\n", id, data, id)
}

// cutText is s bounded to max bytes, cut at a character boundary.
func cutText(s string, max int) (string, bool) {
	if len(s) <= max {
		return s, false
	}
	i := max
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i], true
}

// jsonString is s as a JSON string, as the grader is asked to copy it:
// without the HTML escapes, which the grader would have to copy too.
func jsonString(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}
