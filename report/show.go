package report

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/internal/termsafe"
	"github.com/harness-dev/harness/record"
)

// RunView is one run as `harness show` presents it.
type RunView struct {
	RunSummary
	Prompt    string              `json:"prompt"`
	Model     string              `json:"model"`
	WireAPI   string              `json:"wireApi,omitempty"`
	Endpoint  string              `json:"endpoint,omitempty"`
	Preloaded []string            `json:"preloadedSkills"`
	Activated []record.Activation `json:"activations"`
	Turns     []TurnView          `json:"turnDetails"`
	Denials   []record.Denial     `json:"denials"`
	Usage     record.UsageRecord  `json:"usage"`
	// result.json's usage per model and what it cost.
	record.ModelCosts
	Answer     string              `json:"answer"`
	Drift      *record.DriftReport `json:"drift,omitempty"`
	Children   []RunSummary        `json:"children"`
	ResumeWith string              `json:"resumeCommand,omitempty"`
	// ResumeEstimate is what a limit ResumeWith raises rests on.
	ResumeEstimate string `json:"resumeEstimate,omitempty"`
	ResultFound    bool   `json:"resultFound"`
	// Waiting are the calls awaiting a person's decision.
	Waiting []record.PendingApproval `json:"pendingApprovals,omitempty"`
	// Verdict is how the run directory verified (set by the caller).
	Verdict Verdict `json:"verification"`
	// Approvals are every call that waited for a person, and what was
	// decided (from the journal).
	Approvals []ApprovalView `json:"approvals,omitempty"`
	// Discoveries are the run's discover_skills searches; SkillsAdded the
	// skills it created or installed through the store (live or pending).
	Discoveries []record.SkillsDiscovered `json:"discoveries,omitempty"`
	SkillsAdded []record.SkillCreated     `json:"skillsAdded,omitempty"`
}

// ApprovalView is one call that waited for a person.
type ApprovalView struct {
	CallID   string `json:"callId"`
	Tool     string `json:"tool"`
	Skill    string `json:"skill,omitempty"`
	Why      string `json:"why"`
	Decision string `json:"decision"` // waiting, approved or denied
	Actor    string `json:"actor,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// TurnView is one model turn: what it said and the tools it called.
type TurnView struct {
	Turn  int        `json:"turn"`
	Text  string     `json:"text,omitempty"`
	Calls []CallView `json:"calls"`
	Usage int64      `json:"totalTokens"`
}

// CallView is one tool call with its policy decision and outcome.
type CallView struct {
	ID        string `json:"id"`
	Tool      string `json:"tool"`
	Arguments string `json:"arguments"`
	Decision  string `json:"decision,omitempty"`
	Reasons   string `json:"reasons,omitempty"`
	Status    string `json:"status,omitempty"`
	Code      string `json:"code,omitempty"`
	// Output is the tool-output file, relative to the run directory;
	// DurationMs from the call's start to its end in the journal.
	Output     string `json:"output,omitempty"`
	DurationMs int64  `json:"durationMs,omitempty"`
	// Label is the provenance label the policy gave the call.
	Label   string `json:"label,omitempty"`
	started time.Time
}

// Show reads a run directory into a RunView.
func Show(dir string) (*RunView, error) {
	s, err := Summarize(dir)
	if err != nil {
		return nil, err
	}
	m, _ := record.ReadManifest(s.RunDir)
	v := &RunView{RunSummary: *s, Prompt: m.Inputs.Prompt, Model: m.Inputs.Model, WireAPI: m.Inputs.WireAPI, Endpoint: m.Inputs.BaseURL,
		Preloaded: m.Inputs.Skills, Activated: []record.Activation{}, Turns: []TurnView{}, Denials: []record.Denial{},
		Usage: m.Usage, Children: []RunSummary{}}
	if m.Final != nil {
		v.Answer = m.Final.Content
	}
	if data, err := artifacts.ReadBeneath(s.RunDir, record.FileResult); err == nil {
		var res record.Result
		if json.Unmarshal(data, &res) == nil {
			v.ResultFound, v.Denials, v.ResumeWith, v.ResumeEstimate = true, res.Denials, res.ResumeCommand, res.ResumeEstimate
			v.Waiting = res.PendingApprovals
			v.ModelCosts = res.ModelCosts
			if res.Answer != "" {
				v.Answer = res.Answer
			}
		}
	}
	if v.ResumeWith == "" && v.Resumable {
		v.ResumeWith = "harness resume " + s.RunDir
	}
	if data, err := artifacts.ReadBeneath(s.RunDir, record.FileDrift); err == nil {
		var d record.DriftReport
		if json.Unmarshal(data, &d) == nil {
			v.Drift = &d
		}
	}
	readTurns(s.RunDir, v)
	if kids, err := List(filepath.Join(s.RunDir, record.DirChildren)); err == nil {
		v.Children = kids
	}
	return v, nil
}

// readTurns walks the journal: responses, calls, decisions, results.
func readTurns(dir string, v *RunView) {
	f, err := artifacts.OpenBeneath(dir, record.FileJournal, os.O_RDONLY, 0)
	if err != nil {
		return
	}
	defer f.Close()
	c, _ := artifacts.ReadJournal(f)
	calls := map[string]*CallView{}
	for _, ev := range c.Events {
		switch ev.Type {
		case record.EventToolStarted:
			var d struct {
				CallID string `json:"callId"`
			}
			if json.Unmarshal(ev.Data, &d) == nil && calls[d.CallID] != nil {
				calls[d.CallID].started = ev.Time
			}
		case record.EventSkillActivated:
			var a record.Activation
			if json.Unmarshal(ev.Data, &a) == nil {
				v.Activated = append(v.Activated, a)
			}
		case record.EventModelResponse:
			var d record.ModelResponse
			if json.Unmarshal(ev.Data, &d) != nil {
				continue
			}
			t := TurnView{Turn: d.Turn, Text: d.Content, Calls: []CallView{}, Usage: d.Usage.TotalTokens}
			for _, c := range d.ToolCalls {
				t.Calls = append(t.Calls, CallView{ID: c.ID, Tool: c.Name, Arguments: c.Arguments})
			}
			v.Turns = append(v.Turns, t)
			last := &v.Turns[len(v.Turns)-1]
			for i := range last.Calls {
				calls[last.Calls[i].ID] = &last.Calls[i]
			}
		case record.EventPolicyDecision:
			var d record.PolicyDecision
			if json.Unmarshal(ev.Data, &d) == nil && calls[d.CallID] != nil {
				c := calls[d.CallID]
				c.Decision, c.Reasons = d.Decision.Decision, strings.Join(d.Reasons, ",")
				if lb, err := json.Marshal(d.Label); err == nil && string(lb) != "null" {
					c.Label = string(lb)
				}
			}
		case record.EventSkillsDiscovered:
			var d record.SkillsDiscovered
			if json.Unmarshal(ev.Data, &d) == nil {
				v.Discoveries = append(v.Discoveries, d)
			}
		case record.EventSkillCreated:
			var d record.SkillCreated
			if json.Unmarshal(ev.Data, &d) == nil {
				v.SkillsAdded = append(v.SkillsAdded, d)
			}
		case record.EventApprovalRequested:
			var d record.ApprovalRequested
			if json.Unmarshal(ev.Data, &d) == nil {
				v.Approvals = append(v.Approvals, ApprovalView{CallID: d.CallID, Tool: d.Tool, Skill: d.Skill, Why: d.Why, Decision: "waiting"})
			}
		case record.EventApprovalDecided:
			var d record.ApprovalDecided
			if json.Unmarshal(ev.Data, &d) == nil {
				for i := range v.Approvals {
					if v.Approvals[i].CallID == d.CallID {
						v.Approvals[i].Decision, v.Approvals[i].Actor, v.Approvals[i].Reason = d.Decision, d.Actor, d.Reason
					}
				}
			}
		case record.EventToolFinished:
			var d record.ToolFinished
			if json.Unmarshal(ev.Data, &d) == nil && calls[d.CallID] != nil {
				c := calls[d.CallID]
				c.Status, c.Code, c.Output = d.Status, d.Code, d.Output
				if !c.started.IsZero() {
					c.DurationMs = ev.Time.Sub(c.started).Milliseconds()
				}
			}
		}
	}
}

// WriteText prints a RunView for people. Nearly everything in it was
// written by a model, a skill, a provider or whoever could write the run
// directory: each such text goes through termsafe, so that a control
// sequence in a call id or its arguments cannot make a line say something
// other than what the record holds.
func WriteText(w io.Writer, v *RunView, now time.Time) {
	e := termsafe.Escape
	if v.Verdict.Checked && !v.Verdict.OK {
		fmt.Fprintf(w, "DOES NOT VERIFY: %s\n", e(v.Verdict.Problem))
	}
	fmt.Fprintf(w, "run %s: %s", e(v.RunID), e(v.Status))
	if v.Reason != "" {
		fmt.Fprintf(w, " (%s)", e(v.Reason))
	}
	if v.Ended() {
		fmt.Fprintf(w, ", exit %d", v.ExitCode)
	} else {
		fmt.Fprint(w, ", no exit code yet")
	}
	fmt.Fprintf(w, ", %d turns, started %s ago\n", v.RunSummary.Turns, Age(now, v.StartedAt))
	fmt.Fprintf(w, "directory: %s\n", e(v.RunDir))
	fmt.Fprintf(w, "records: %s\n", e(v.Verdict.Words()))
	fmt.Fprintf(w, "model: %s", e(v.Model))
	if v.Endpoint != "" {
		fmt.Fprintf(w, " at %s", e(v.Endpoint))
	}
	if v.WireAPI == "responses" {
		fmt.Fprint(w, " (Responses API)")
	}
	fmt.Fprintf(w, "\nprompt: %s\n", e(firstLines(v.Prompt, 3)))
	if len(v.Preloaded) > 0 {
		fmt.Fprintf(w, "skills preloaded: %s\n", e(strings.Join(v.Preloaded, ", ")))
	}
	for _, a := range v.Activated {
		fmt.Fprintf(w, "skill activated: %s (%s, %s)\n", e(a.Name), e(a.Source), e(string(a.Digest)))
	}
	for _, t := range v.Turns {
		fmt.Fprintf(w, "turn %d (%d tokens)", t.Turn, t.Usage)
		if t.Text != "" {
			fmt.Fprintf(w, ": %s", e(firstLines(t.Text, 1)))
		}
		fmt.Fprintln(w)
		for _, c := range t.Calls {
			fmt.Fprintf(w, "  %s %s", e(c.Tool), shorten(e(c.Arguments), 120))
			if c.Decision != "" {
				fmt.Fprintf(w, " -> %s [%s]", e(c.Decision), e(c.Reasons))
			}
			if c.Status != "" {
				fmt.Fprintf(w, " -> %s", e(c.Status))
				if c.Code != "" {
					fmt.Fprintf(w, " (%s)", e(c.Code))
				}
			}
			fmt.Fprintln(w)
		}
	}
	for _, d := range v.Denials {
		fmt.Fprintf(w, "denied: %s (%s), call %s\n", e(d.Tool), e(d.Reason), e(d.CallID))
	}
	fmt.Fprintf(w, "usage: %d prompt + %d completion = %d tokens\n", v.Usage.Total.PromptTokens, v.Usage.Total.CompletionTokens, v.Usage.Total.TotalTokens)
	if len(v.UsageByModel) > 1 || v.Cost != nil {
		for _, u := range v.UsageByModel {
			fmt.Fprintf(w, "  %s: %d prompt + %d completion = %d tokens%s\n", e(u.Model), u.PromptTokens, u.CompletionTokens, u.TotalTokens, costText(u.Cost))
		}
	}
	if v.Cost != nil {
		fmt.Fprintf(w, "cost: %s", strings.TrimPrefix(costText(v.Cost), ", cost "))
		if len(v.Unpriced) > 0 {
			fmt.Fprintf(w, " (not counting %s: no --price)", e(strings.Join(v.Unpriced, ", ")))
		}
		fmt.Fprintln(w)
	}
	if v.Drift != nil && v.Drift.Drift {
		fmt.Fprintf(w, "drift: %d identity fields, %d skills changed, %d files (allowed: %v)\n", len(v.Drift.Identity), len(v.Drift.Skills.Changed), len(v.Drift.Resources), v.Drift.Allowed)
	}
	for _, c := range v.Children {
		fmt.Fprintf(w, "child %s: %s, exit %d\n", e(c.RunID), e(c.Status), c.ExitCode)
	}
	if v.Answer != "" {
		fmt.Fprintf(w, "answer:\n%s\n", termsafe.Lines(v.Answer))
	}
	for _, d := range v.Discoveries {
		var names []string
		for _, r := range d.Results {
			names = append(names, e(r.Name)+" ("+e(r.From)+")")
		}
		fmt.Fprintf(w, "skills discovered for %q: %s\n", e(d.Query), strings.Join(names, ", "))
	}
	for _, c := range v.SkillsAdded {
		how := "created"
		if c.From != "" {
			how = "installed from " + e(c.From)
		}
		fmt.Fprintf(w, "skill %s %s: %s\n", e(c.Skill), how, e(c.Outcome))
	}
	for _, a := range v.Approvals {
		if a.Decision != "waiting" {
			fmt.Fprintf(w, "approval: %s %s %s by %s", e(a.CallID), e(a.Tool), e(a.Decision), e(a.Actor))
			if a.Reason != "" {
				fmt.Fprintf(w, ": %s", e(a.Reason))
			}
			fmt.Fprintln(w)
		}
	}
	for _, c := range v.Waiting {
		fmt.Fprintf(w, "waiting for approval: %s %s %s (%s): harness resume %s --approve %s, or --deny %s\n", e(c.CallID), e(c.Tool), shorten(e(c.Arguments), 120), e(c.Why), e(v.RunDir), e(c.CallID), e(c.CallID))
	}
	if v.ResumeWith != "" {
		fmt.Fprintf(w, "resume: %s\n", e(v.ResumeWith))
		if v.ResumeEstimate != "" {
			fmt.Fprintf(w, "  (%s)\n", e(v.ResumeEstimate))
		}
	}
}

// Age is a duration for people: 45s, 12m, 3h, 2d.
func Age(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(strings.TrimSpace(s), "\n", n+1)
	if len(lines) > n {
		return strings.Join(lines[:n], " / ") + " ..."
	}
	return strings.Join(lines, " / ")
}

func shorten(s string, n int) string {
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "..."
}

// costText is a cost as show prints it: ", cost 0.0123", "" for none.
func costText(c *float64) string {
	if c == nil {
		return ""
	}
	return fmt.Sprintf(", cost %.4f", *c)
}
