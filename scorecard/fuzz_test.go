package scorecard

import (
	"encoding/json"
	"encoding/xml"
	"regexp"
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/junit"
	"github.com/harness-dev/harness/record"
)

var endOrComment = regexp.MustCompile(`(?i)</script|<!--`)

// FuzzBenchmarkText: whatever a grader writes, benchmark.json is JSON,
// carries no script end or comment opener, and says what was written
// (a word joiner aside).
func FuzzBenchmarkText(f *testing.F) {
	f.Add("</script><script>alert(1)</script>", "<!--")
	f.Add("</SCRIPT\t>", "<<//script")
	f.Add("plain", "\u2060")
	f.Fuzz(func(t *testing.T, text, evidence string) {
		m := record.EvalManifest{Skill: text, Configurations: []string{record.ConfigWithSkill}, Models: []string{"m"}}
		c := record.EvalCell{ID: "c", EvalID: "1", EvalName: text, Configuration: record.ConfigWithSkill, Model: "m", Epoch: 1}
		m.Cells = []record.EvalCell{c}
		g := record.EvalGrading{Cell: c, Run: record.EvalRun{Status: runSucceeded},
			Expectations: []record.GradedItem{{Text: text, Evidence: evidence, Status: record.GradePassed, Passed: true}},
			Summary:      record.GradingSummary{Passed: 1, Total: 1, PassRate: 1}}
		raw, err := Benchmark(m, []record.EvalGrading{g}, Summarize(m, []record.EvalGrading{g}))
		if err != nil {
			t.Fatal(err)
		}
		if endOrComment.Match(raw) {
			t.Fatalf("benchmark.json carries %q", endOrComment.Find(raw))
		}
		var doc struct {
			Runs []struct {
				Expectations []benchmarkExpectation `json:"expectations"`
			} `json:"runs"`
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatalf("benchmark.json does not parse: %v", err)
		}
		strip := func(s string) string { return strings.ReplaceAll(s, "\u2060", "") }
		got := doc.Runs[0].Expectations[0]
		if strip(got.Text) != strip(string([]rune(text))) || strip(got.Evidence) != strip(string([]rune(evidence))) {
			t.Fatalf("written %q / %q, read back %q / %q", text, evidence, got.Text, got.Evidence)
		}
		if endOrComment.MatchString(got.Text) || endOrComment.MatchString(got.Evidence) {
			t.Fatalf("decoded text still ends a script: %q %q", got.Text, got.Evidence)
		}
	})
}

// FuzzJUnitText: whatever a grader writes, junit.xml parses and keeps
// one testcase per eval × configuration.
func FuzzJUnitText(f *testing.F) {
	f.Add("]]></failure><testcase name=\"x\"/>", "\x00\x1b\uFFFE")
	f.Add("<![CDATA[", "&#0;")
	f.Fuzz(func(t *testing.T, text, evidence string) {
		m := record.EvalManifest{Skill: text, Configurations: []string{record.ConfigWithSkill}, Models: []string{text}}
		c := record.EvalCell{ID: "c", EvalID: "1", EvalName: text, Configuration: record.ConfigWithSkill, Model: text, Epoch: 1}
		m.Cells = []record.EvalCell{c}
		g := record.EvalGrading{Cell: c, Run: record.EvalRun{Status: runSucceeded},
			Expectations: []record.GradedItem{{Text: text, Evidence: evidence, Status: record.GradeFailed}},
			Summary:      record.GradingSummary{Failed: 1, Total: 1}}
		res := Summarize(m, []record.EvalGrading{g})
		res.Gate = &record.EvalGate{Missed: []string{text}}
		raw, err := JUnit(m, []record.EvalGrading{g}, res)
		if err != nil {
			t.Fatal(err)
		}
		var doc junit.Suites
		if err := xml.Unmarshal(raw, &doc); err != nil {
			t.Fatalf("junit.xml does not parse: %v\n%s", err, raw)
		}
		if doc.Tests != 2 || doc.Failures != 2 {
			t.Fatalf("tests %d failures %d, want 2 and 2", doc.Tests, doc.Failures)
		}
	})
}
