package grader

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/harness-dev/harness/loop"
)

// decision is what one reply said of one expectation asked.
type decision struct {
	passed   bool
	evidence string
}

// gradingReply is a reply read against the expectations asked: decided
// has one entry per expectation (nil where the reply did not decide it,
// why[i] then saying why), problems everything wrong with the reply. A
// reply with no problems decided every expectation by its exact text.
type gradingReply struct {
	decided  []*decision
	why      []string
	problems []string
}

// maxReplyDepth bounds nesting in a reply: a grading is three levels
// deep, and the decoder must not be walked into a stack of brackets.
const maxReplyDepth = 32

// readReply reads a grader's response: a refusal is not a grading.
func readReply(resp loop.Response, asked []string) gradingReply {
	if resp.Refusal != "" {
		return undecided(asked, "the grader refused: "+resp.Refusal)
	}
	gr := parseGrading(resp.Message.Content, asked)
	if resp.FinishReason == "length" && len(gr.problems) > 0 {
		gr.problems = append(gr.problems, "the reply was cut at the completion token limit: keep the evidence short")
	}
	return gr
}

func undecided(asked []string, why string) gradingReply {
	gr := gradingReply{decided: make([]*decision, len(asked)), why: make([]string, len(asked)), problems: []string{why}}
	for i := range gr.why {
		gr.why[i] = why
	}
	return gr
}

// replyItem is one item of a reply's expectations, checked: usable when
// flaw is "".
type replyItem struct {
	text     string
	hasText  bool
	passed   bool
	evidence string
	flaw     string
}

// parseGrading reads content as a grading of asked. The rules do not
// depend on what the expectations, the answer or the evidence say: the
// content must be exactly one JSON object (a Markdown fence around all of
// it is allowed), with no key twice in any object, whose "expectations"
// is an array of objects with a string "text", a boolean "passed" and a
// string "evidence". An item decides the expectation whose text it
// copies exactly; only when the reply has as many items as were asked,
// and every item matched by text sits at its expectation's place, does an
// item with another text decide the expectation at its place. No item
// ever decides an expectation that was not asked, and an expectation
// that has more items than it was asked times is undecided.
func parseGrading(content string, asked []string) gradingReply {
	payload := unfence(content)
	if err := strictJSON([]byte(payload)); err != nil {
		return undecided(asked, "the reply is not one JSON object: "+err.Error())
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal([]byte(payload), &top); err != nil || top == nil {
		return undecided(asked, "the reply is not a JSON object")
	}
	raw, ok := top["expectations"]
	if !ok {
		return undecided(asked, `the reply has no "expectations" key`)
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(raw, &raws); err != nil || raws == nil {
		return undecided(asked, `the reply's "expectations" is not an array`)
	}
	got := make([]replyItem, len(raws))
	for j, r := range raws {
		got[j] = readItem(r)
	}
	return match(got, asked)
}

// readItem checks one item of a reply.
func readItem(raw json.RawMessage) replyItem {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return replyItem{flaw: "is not a JSON object"}
	}
	var it replyItem
	var text any
	if r, ok := fields["text"]; ok && json.Unmarshal(r, &text) == nil {
		it.text, it.hasText = text.(string)
	}
	if !it.hasText {
		it.flaw = `has no string "text"`
		return it
	}
	var passed, evidence any
	if r, ok := fields["passed"]; !ok || json.Unmarshal(r, &passed) != nil {
		it.flaw = `has no "passed"`
		return it
	}
	b, ok := passed.(bool)
	if !ok {
		it.flaw = fmt.Sprintf(`has "passed": %s, which is not the JSON boolean true or false`, clip(string(fields["passed"])))
		return it
	}
	it.passed = b
	if r, ok := fields["evidence"]; !ok || json.Unmarshal(r, &evidence) != nil {
		it.flaw = `has no "evidence"`
		return it
	}
	if it.evidence, ok = evidence.(string); !ok {
		it.flaw = `has an "evidence" that is not a string`
	}
	return it
}

// match pairs a reply's items with the expectations asked (see
// parseGrading).
func match(got []replyItem, asked []string) gradingReply {
	gr := gradingReply{decided: make([]*decision, len(asked)), why: make([]string, len(asked))}
	used := make([]bool, len(got))
	// byText maps a text to where it stands, in order, among the items
	// and among the expectations: the k-th item with a text answers the
	// k-th expectation with it, so an expectation asked twice is graded
	// twice.
	itemsOf := map[string][]int{}
	for j, it := range got {
		if it.hasText {
			itemsOf[it.text] = append(itemsOf[it.text], j)
		}
	}
	askedOf := map[string][]int{}
	for i, text := range asked {
		askedOf[text] = append(askedOf[text], i)
	}
	seen := map[string]bool{}
	covered := make([]bool, len(asked))
	for _, text := range asked {
		if seen[text] {
			continue
		}
		seen[text] = true
		is, js := askedOf[text], itemsOf[text]
		if len(js) == 0 {
			continue
		}
		for _, j := range js {
			used[j] = true
		}
		if len(js) > len(is) {
			why := fmt.Sprintf("the reply has %d items for the expectation %s, asked %d time(s)", len(js), clip(jsonString(text)), len(is))
			gr.problems = append(gr.problems, why)
			for _, i := range is {
				covered[i] = true
				gr.why[i] = why
			}
			continue
		}
		for k, j := range js {
			i := is[k]
			covered[i] = true
			if it := got[j]; it.flaw != "" {
				gr.why[i] = fmt.Sprintf("its item %s", it.flaw)
				gr.problems = append(gr.problems, fmt.Sprintf("item %d (%s) %s", j+1, clip(jsonString(text)), it.flaw))
			} else {
				gr.decided[i] = &decision{passed: it.passed, evidence: it.evidence}
			}
		}
	}
	// An item whose text is not the expectation's is never taken for it,
	// not even in its place: a grader answering for another expectation
	// (another cell's, a rewording that changes what is claimed) would
	// pass this one. It is asked again, and then left ungraded.
	for i, text := range asked {
		if covered[i] {
			continue
		}
		gr.why[i] = "the reply has no item with this expectation's exact text"
		gr.problems = append(gr.problems, fmt.Sprintf("expectation %d (%s) is missing", i+1, clip(jsonString(text))))
	}
	for j, it := range got {
		if used[j] {
			continue
		}
		if !it.hasText {
			gr.problems = append(gr.problems, fmt.Sprintf("item %d %s", j+1, it.flaw))
			continue
		}
		gr.problems = append(gr.problems, fmt.Sprintf("item %d (%s) is not one of the expectations asked", j+1, clip(jsonString(it.text))))
	}
	return gr
}

// unfence is content without surrounding space and without a Markdown
// code fence around the whole of it, which models add although told not
// to. Only a fence around everything is taken off: JSON found inside
// prose is not looked for, since an answer the grader quotes may hold
// JSON of its own.
func unfence(content string) string {
	s := strings.TrimSpace(content)
	if !strings.HasPrefix(s, "```") || !strings.HasSuffix(s, "```") || len(s) < 6 {
		return s
	}
	nl := strings.IndexByte(s, '\n')
	if nl < 0 {
		return s
	}
	if lang := strings.TrimSpace(s[3:nl]); lang != "" && lang != "json" {
		return s
	}
	return strings.TrimSpace(s[nl+1 : len(s)-3])
}

// strictJSON checks that b is exactly one JSON value in which no object
// has a key twice: encoding/json keeps the last of two, so {"passed":
// false, "passed": true} would read as passed although the grader also
// said it failed.
func strictJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := walkJSON(dec, 0); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("there is more after the JSON value")
	}
	return nil
}

func walkJSON(dec *json.Decoder, depth int) error {
	if depth > maxReplyDepth {
		return fmt.Errorf("it nests deeper than %d levels", maxReplyDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	switch d {
	case '{':
		keys := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return err
			}
			k, _ := kt.(string)
			if keys[k] {
				return fmt.Errorf("the key %s appears twice in one object", clip(jsonString(k)))
			}
			keys[k] = true
			if err := walkJSON(dec, depth+1); err != nil {
				return err
			}
		}
	case '[':
		for dec.More() {
			if err := walkJSON(dec, depth+1); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("unexpected %v", d)
	}
	_, err = dec.Token()
	return err
}

// clip bounds a text quoted in a problem: the problems go back to the
// grader and into evidence.
func clip(s string) string {
	c, cut := cutText(s, 200)
	if cut {
		return c + "…"
	}
	return c
}
