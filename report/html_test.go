package report

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/harness-dev/harness/record"
)

// hostile is markup a model, a tool or a phase name could carry into a
// report; none of it may arrive in the page as markup.
const hostile = `<script>alert(1)</script><img src=x onerror=alert(2)><a href="javascript:alert(3)">x</a><svg onload=alert(4)>`

// rawMarkup finds any tag the hostile text would have opened had it not
// been escaped.
var rawMarkup = regexp.MustCompile(`(?i)<(script|img|a href="javascript|svg onload)`)

func TestWriteHTMLEscapesEveryText(t *testing.T) {
	run := &RunPage{
		RunView: &RunView{
			RunSummary: RunSummary{RunID: hostile, Status: hostile, Reason: hostile, RunDir: hostile},
			Prompt:     hostile, Model: hostile, Endpoint: hostile, Preloaded: []string{hostile}, Answer: hostile,
			ResumeWith: hostile,
			Activated:  []record.Activation{{Name: hostile, Source: hostile}},
			Denials:    []record.Denial{{Tool: hostile, Reason: hostile, CallID: hostile}},
			Turns: []TurnView{{Turn: 1, Text: hostile, Usage: 10, Calls: []CallView{{
				ID: hostile, Tool: hostile, Arguments: hostile, Decision: hostile, Reasons: hostile,
				Status: hostile, Code: hostile, Label: hostile,
			}}}},
		},
		Anchor:  "run",
		Outputs: map[string]string{hostile: hostile, "long": strings.Repeat(hostile, 100)},
		ChildOf: map[string]string{hostile: hostile},
	}
	run.Chart = usageChart(run.Turns)
	units := []UnitRow{
		{PhaseOutcome: record.PhaseOutcome{Name: hostile, Status: hostile, Message: hostile}},
		{PhaseOutcome: record.PhaseOutcome{Name: "b", Status: "succeeded"}, Needs: []string{hostile}},
	}
	for _, p := range []*Page{
		{Title: hostile, Kind: "run", Run: run},
		{Title: hostile, Kind: "pipeline", Set: &SetPage{ID: hostile, Status: hostile, Message: hostile, Units: units, Graph: dependencyGraph(units), Runs: []*RunPage{run}}},
	} {
		var b bytes.Buffer
		if err := WriteHTML(&b, p); err != nil {
			t.Fatal(err)
		}
		page := b.String()
		if m := rawMarkup.FindString(page); m != "" {
			t.Errorf("%s page: %q reached the HTML as markup", p.Kind, m)
		}
		if !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Errorf("%s page: the hostile text is not shown escaped", p.Kind)
		}
	}
}

func TestWriteHTMLLoadsNothing(t *testing.T) {
	var b bytes.Buffer
	run := &RunPage{RunView: &RunView{RunSummary: RunSummary{RunID: "r"}}, Anchor: "run"}
	if err := WriteHTML(&b, &Page{Title: "t", Kind: "run", Run: run}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, ref := range []string{"<script", "<link", "src=\"http", "href=\"http", "@import", "url(http"} {
		if strings.Contains(page, ref) {
			t.Errorf("the page refers to something outside itself: %s", ref)
		}
	}
	if !strings.Contains(page, `<meta http-equiv="Content-Security-Policy" content="default-src 'none'`) {
		t.Error("the page has no content security policy that forbids loading")
	}
}

func TestReadable(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"content":"\u003cb\u003e"}`, "{\n  \"content\": \"<b>\"\n}"},
		{`plain <b> text`, `plain <b> text`},
		{`[1,2]`, "[\n  1,\n  2\n]"},
		{`{"broken"`, `{"broken"`},
	} {
		if got := readable(tc.in); got != tc.want {
			t.Errorf("readable(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestDependencyGraphLayout(t *testing.T) {
	units := []UnitRow{
		{PhaseOutcome: record.PhaseOutcome{Name: "spec", Status: "succeeded"}},
		{PhaseOutcome: record.PhaseOutcome{Name: "build", Status: "failed"}, Needs: []string{"spec"}},
		{PhaseOutcome: record.PhaseOutcome{Name: "critic", Status: "skipped"}, Needs: []string{"build", "spec"}},
		// A cycle cannot reach a pipeline (the file is refused) but the
		// drawing must still end.
		{PhaseOutcome: record.PhaseOutcome{Name: "x"}, Needs: []string{"y"}},
		{PhaseOutcome: record.PhaseOutcome{Name: "y"}, Needs: []string{"x"}},
	}
	svg := string(dependencyGraph(units))
	if got := strings.Count(svg, "<line "); got != 5 {
		t.Errorf("%d arrows, want 5 (one per need)", got)
	}
	for _, class := range []string{`class="node ok"`, `class="node bad"`, `class="node skip"`} {
		if !strings.Contains(svg, class) {
			t.Errorf("no %s", class)
		}
	}
	// critic needs build needs spec: three columns, so the widest
	// column index is 2.
	if !strings.Contains(svg, `width="630"`) {
		t.Errorf("the graph is not three columns wide: %s", svg[:120])
	}
}

func TestUsageChartScales(t *testing.T) {
	svg := string(usageChart([]TurnView{{Turn: 1, Usage: 50}, {Turn: 2, Usage: 100}, {Turn: 3, Usage: 0}}))
	for _, want := range []string{`height="40"><title>turn 1: 50 tokens`, `height="80"><title>turn 2: 100 tokens`, `height="0"><title>turn 3: 0 tokens`} {
		if !strings.Contains(svg, want) {
			t.Errorf("chart lacks %q", want)
		}
	}
	if usageChart(nil) != "" {
		t.Error("a run without turns has a chart")
	}
}
