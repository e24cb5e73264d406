package scorecard

import (
	"encoding/xml"
	"strings"
	"testing"

	gojunit "github.com/joshdk/go-junit"

	"github.com/harness-dev/harness/internal/junit"
	"github.com/harness-dev/harness/record"
)

func TestJUnit(t *testing.T) {
	f := benchFixture()
	// A third eval: with_skill passes everything, without_skill's run
	// failed though its checks passed, and one cell of old_skill not run.
	f.m.Configurations = append(f.m.Configurations, record.ConfigOldSkill)
	f.cell("3", record.ConfigWithSkill, "m1", 1, true, 1000, 10, nil, runSucceeded, "x=passed")
	f.cell("3", record.ConfigWithoutSkill, "m1", 1, true, 1000, 10, nil, "limit", "x=passed")
	f.cell("3", record.ConfigOldSkill, "m1", 1, false, 0, 0, nil, "")
	f.gradings[len(f.gradings)-1].Run.ExitCode = 4
	f.trigger("m1", 1, true, ptr(true))
	f.trigger("m1", 2, false, ptr(true))
	f.trigger("m1", 3, true, nil)
	// Hostile text: XML markup, a CDATA end, control characters.
	f.gradings[0].Expectations[1].Evidence = "]]></failure><testcase name=\"forged\"/>\x00\x1b\uFFFE end"
	f.gradings[1].Expectations[1].Evidence = "]]></failure><testcase name=\"forged\"/>\x00\x1b\uFFFE end"

	res := Summarize(f.m, f.gradings)
	ApplyGate(&res, GateOptions{MinPassRate: ptr(0.9)}, nil)
	raw, err := JUnit(f.m, f.gradings, res)
	if err != nil {
		t.Fatal(err)
	}

	var doc junit.Suites
	if err := xml.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("junit.xml does not parse: %v\n%s", err, raw)
	}
	type outcome struct{ state, message string }
	got := map[string]outcome{}
	for _, s := range doc.Suites {
		for _, c := range s.Cases {
			o := outcome{state: "passed"}
			if c.Failure != nil {
				o = outcome{"failed", c.Failure.Message}
			}
			if c.Skipped != nil {
				o = outcome{"skipped", c.Skipped.Message}
			}
			got[s.Name+" / "+c.Name] = o
		}
	}
	want := map[string]outcome{
		"harness.eval.pdf.m1 / 1: Fill the <tax> form (with_skill)":    {"failed", "pass rate 0.75 ± 0.35 [0.00, 1.00] over 2 graded cells"},
		"harness.eval.pdf.m1 / 1: Fill the <tax> form (without_skill)": {"failed", "pass rate 0.50 ± 0.00 [0.50, 0.50] over 2 graded cells"},
		"harness.eval.pdf.m1 / 2 (with_skill)":                         {"failed", "pass rate 0.83 ± 0.24 [0.00, 1.00] over 2 graded cells"},
		"harness.eval.pdf.m1 / 2 (without_skill)":                      {"failed", "pass rate 0.17 ± 0.24 [0.00, 1.00] over 2 graded cells"},
		"harness.eval.pdf.m1 / 3 (with_skill)":                         {"passed", ""},
		"harness.eval.pdf.m1 / 3 (without_skill)":                      {"failed", "pass rate 1.00 (one cell, no interval) over 1 graded cells; 1 runs did not succeed"},
		"harness.eval.pdf.m1 / 3 (old_skill)":                          {"skipped", "no cell graded (1 not run)"},
		"harness.eval.pdf.m1 / trigger t1":                             {"passed", ""},
		"harness.eval.pdf.m1 / trigger t2":                             {"failed", "should not trigger; right in 0 of 1"},
		"harness.eval.pdf.m1 / trigger t3":                             {"failed", "should trigger; right in 0 of 1"},
		"harness.eval.pdf.gate / gate":                                 {"failed", "gate missed (1 conditions)"},
	}
	for name, w := range want {
		if g, ok := got[name]; !ok || g != w {
			t.Errorf("%s: %+v, want %+v", name, g, w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d testcases, want %d: %v", len(got), len(want), got)
	}
	if doc.Tests != 11 || doc.Failures != 8 || doc.Skipped != 1 {
		t.Errorf("totals: tests %d failures %d skipped %d", doc.Tests, doc.Failures, doc.Skipped)
	}

	// The failing items are in the failure text with their evidence;
	// hostile evidence stays text.
	for _, s := range doc.Suites {
		for _, c := range s.Cases {
			if c.Name != "1: Fill the <tax> form (with_skill)" {
				continue
			}
			text := c.Failure.Text
			for _, want := range []string{"[failed] Has SUM in B10", `evidence: ]]></failure><testcase name="forged"/>`, "end"} {
				if !strings.Contains(text, want) {
					t.Errorf("failure text lacks %q:\n%s", want, text)
				}
			}
			if strings.ContainsAny(text, "\x00\x1b\uFFFE") {
				t.Errorf("failure text keeps characters XML cannot carry: %q", text)
			}
		}
	}

	// A CI reader parses it too.
	suites, err := gojunit.Ingest(raw)
	if err != nil {
		t.Fatalf("go-junit: %v", err)
	}
	n := 0
	for _, s := range suites {
		n += len(s.Tests)
	}
	if n != 11 {
		t.Errorf("go-junit reads %d tests, want 11", n)
	}
}
