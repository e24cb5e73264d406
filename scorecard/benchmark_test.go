package scorecard

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/testenv"
	"github.com/harness-dev/harness/record"
)

// skillCreator is skill-creator's own files (testdata/skill-creator/README.md).
const skillCreator = "testdata/skill-creator"

// benchFixture is two evals, with and without the skill, two epochs, one
// model, with tool calls, errors and a hostile expectation.
func benchFixture() *fixture {
	f := newFixture([]string{record.ConfigWithSkill, record.ConfigWithoutSkill}, []string{"m1"})
	add := func(eval, config string, epoch int, durMs, tokens int64, items ...string) {
		f.cell(eval, config, "m1", epoch, true, durMs, tokens, nil, runSucceeded, items...)
		g := &f.gradings[len(f.gradings)-1]
		g.Run.ToolCalls = map[string]int{"read_file": epoch, "write_file": 2}
		g.Run.Errors = epoch - 1
		for i := range g.Expectations {
			g.Expectations[i].Evidence = "seen in </script><b>answer</b> | `x`"
		}
	}
	hostile := "Output is a <b>PDF</b> | `file`"
	add("1", record.ConfigWithSkill, 1, 42500, 3800, hostile+"=passed", "Has SUM in B10=passed")
	add("1", record.ConfigWithSkill, 2, 47500, 4100, hostile+"=passed", "Has SUM in B10=failed")
	add("1", record.ConfigWithoutSkill, 1, 30000, 2100, hostile+"=passed", "Has SUM in B10=failed")
	add("1", record.ConfigWithoutSkill, 2, 34000, 2500, hostile+"=passed", "Has SUM in B10=ungraded")
	add("2", record.ConfigWithSkill, 1, 10000, 1000, "a=passed", "b=passed", "c=passed")
	add("2", record.ConfigWithSkill, 2, 12000, 1200, "a=passed", "b=failed", "c=passed")
	add("2", record.ConfigWithoutSkill, 1, 9000, 900, "a=failed", "b=failed", "c=passed")
	add("2", record.ConfigWithoutSkill, 2, 9500, 950, "a=failed", "b=failed", "c=failed")
	for i := range f.m.Cells {
		if f.m.Cells[i].EvalID == "1" {
			f.m.Cells[i].EvalName = "Fill the <tax> form"
		}
	}
	for i := range f.gradings {
		f.gradings[i].Cell = f.m.Cells[i]
	}
	return f
}

func benchmarkOf(t *testing.T, f *fixture) (raw []byte, doc map[string]any) {
	t.Helper()
	res := Summarize(f.m, f.gradings)
	ApplyGate(&res, GateOptions{MinPassRate: ptr(0.9)}, nil)
	raw, err := Benchmark(f.m, f.gradings, res)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	return raw, doc
}

// schemaExample is the benchmark.json example of skill-creator's
// references/schemas.md, the field names its viewer reads.
func schemaExample(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(skillCreator, "references", "schemas.md"))
	if err != nil {
		t.Fatal(err)
	}
	sec := string(b)[strings.Index(string(b), "## benchmark.json"):]
	m := regexp.MustCompile("(?s)```json\n(.*?)```").FindStringSubmatch(sec)
	if m == nil {
		t.Fatal("no benchmark.json example in schemas.md")
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(m[1]), &doc); err != nil {
		t.Fatalf("schemas.md example: %v", err)
	}
	return doc
}

func keys(v any) []string {
	m, _ := v.(map[string]any)
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func TestBenchmarkFieldNames(t *testing.T) {
	want := schemaExample(t)
	_, got := benchmarkOf(t, benchFixture())
	run := func(d map[string]any) map[string]any { return d["runs"].([]any)[0].(map[string]any) }
	sum := func(d map[string]any) map[string]any { return d["run_summary"].(map[string]any) }
	cases := []struct {
		name      string
		want, got any
	}{
		{"top level", want, got},
		{"metadata", want["metadata"], got["metadata"]},
		{"run", run(want), run(got)},
		{"run result", run(want)["result"], run(got)["result"]},
		{"run expectation", run(want)["expectations"].([]any)[0], run(got)["expectations"].([]any)[0]},
		{"run_summary", sum(want), sum(got)},
		{"with_skill", sum(want)["with_skill"], sum(got)["with_skill"]},
		{"with_skill pass_rate", sum(want)["with_skill"].(map[string]any)["pass_rate"], sum(got)["with_skill"].(map[string]any)["pass_rate"]},
		{"without_skill tokens", sum(want)["without_skill"].(map[string]any)["tokens"], sum(got)["without_skill"].(map[string]any)["tokens"]},
		{"delta", sum(want)["delta"], sum(got)["delta"]},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if w, g := keys(tc.want), keys(tc.got); !slices.Equal(w, g) {
				t.Errorf("fields %v, schema has %v", g, w)
			}
		})
	}

	r := run(got)
	if id, ok := r["eval_id"].(float64); !ok || id != 1 {
		t.Errorf("eval_id = %#v, want the integer 1", r["eval_id"])
	}
	if r["eval_name"] != "Fill the <tax> form" || r["configuration"] != record.ConfigWithSkill || r["run_number"] != float64(1) {
		t.Errorf("run = %v", r)
	}
	if d := sum(got)["delta"].(map[string]any); d["pass_rate"] != "+0.46" || d["time_seconds"] != "+7.4" || d["tokens"] != "+912" {
		t.Errorf("delta = %v", d)
	}
}

func TestBenchmarkOrderAndNotes(t *testing.T) {
	raw, doc := benchmarkOf(t, benchFixture())
	// The viewer's columns are run_summary's first two keys: with_skill
	// must come first, without_skill second, delta last.
	s := string(raw)
	iw, io, id := strings.Index(s, `"with_skill": {`), strings.Index(s, `"without_skill": {`), strings.Index(s, `"delta": {`)
	if iw < 0 || io < iw || id < io {
		t.Errorf("run_summary order: with_skill %d, without_skill %d, delta %d", iw, io, id)
	}
	notes := strings.Join(func() (out []string) {
		for _, n := range doc["notes"].([]any) {
			out = append(out, n.(string))
		}
		return out
	}(), "\n")
	for _, want := range []string{
		"Assertion 'Output is a <b>PDF</b> | `file`' passes in every run of every configuration (eval 1)",
		"m1: pass rate with_skill 0.79 ± 0.25 [0.39, 1.00] (n=4); without_skill 0.33 ± 0.24 [0.00, 0.71] (n=4); with_skill − without_skill +0.46",
		"1 expectations ungraded, counted as not passed",
		"Gate missed: with_skill pass rate 0.79 on m1 is below --min-pass-rate 0.9 (n=4)",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	meta := doc["metadata"].(map[string]any)
	if meta["runs_per_configuration"] != float64(2) || meta["executor_model"] != "m1" || fmt.Sprint(meta["evals_run"]) != "[1 2]" {
		t.Errorf("metadata = %v", meta)
	}
}

func TestBenchmarkIDs(t *testing.T) {
	cases := []struct {
		id      string
		value   any
		viewer  any
		comment string
	}{
		{"3", 3, 3, "skill-creator's integer id"},
		{"03", "03", "03", "not the decimal of an integer: kept as written"},
		{"fill-form", "fill-form", "fill-form", "YAML form id"},
		{`<img src=x onerror=alert(1)>`, `<img src=x onerror=alert(1)>`, `&lt;img src=x onerror=alert(1)&gt;`, "evals_run is put into the viewer's page unescaped"},
	}
	for _, tc := range cases {
		if got := evalIDValue(tc.id); got != tc.value {
			t.Errorf("%s: eval_id %#v, want %#v", tc.comment, got, tc.value)
		}
		if got := viewerSafeID(tc.id); got != tc.viewer {
			t.Errorf("%s: evals_run %#v, want %#v", tc.comment, got, tc.viewer)
		}
	}
}

// skillCreatorWorkspace lays the fixture's gradings out as skill-creator
// does (eval-N/<configuration>/run-K/grading.json, timing.json and
// outputs/), so its own scripts can read the same runs.
func skillCreatorWorkspace(t *testing.T, f *fixture) string {
	t.Helper()
	ws := t.TempDir()
	runs := map[string]int{}
	for _, g := range f.gradings {
		key := g.Cell.EvalID + "/" + g.Cell.Configuration
		runs[key]++
		dir := filepath.Join(ws, "eval-"+g.Cell.EvalID, g.Cell.Configuration, fmt.Sprintf("run-%d", runs[key]))
		var exps []map[string]any
		for _, it := range g.Expectations {
			exps = append(exps, map[string]any{"text": it.Text, "passed": it.State() == record.GradePassed, "evidence": it.Evidence})
		}
		tools := 0
		for _, n := range g.Run.ToolCalls {
			tools += n
		}
		grading := map[string]any{
			"expectations":      exps,
			"summary":           map[string]any{"passed": g.Summary.Passed, "failed": g.Summary.Total - g.Summary.Passed, "total": g.Summary.Total, "pass_rate": g.Summary.PassRate},
			"execution_metrics": map[string]any{"total_tool_calls": tools, "errors_encountered": g.Run.Errors},
		}
		timing := map[string]any{"total_duration_seconds": float64(g.Run.DurationMs) / 1000, "total_tokens": g.Run.Tokens}
		writeJSON(t, filepath.Join(dir, "grading.json"), grading)
		writeJSON(t, filepath.Join(dir, "timing.json"), timing)
		writeJSON(t, filepath.Join(ws, "eval-"+g.Cell.EvalID, "eval_metadata.json"), map[string]any{"eval_id": evalIDValue(g.Cell.EvalID), "prompt": "do it"})
		if err := os.MkdirAll(filepath.Join(dir, "outputs"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "outputs", "answer.txt"), []byte("an answer"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestBenchmarkAgreesWithSkillCreator runs skill-creator's
// aggregate_benchmark.py over the same runs: its run_summary, delta and
// runs must be harness's, number for number.
func TestBenchmarkAgreesWithSkillCreator(t *testing.T) {
	py, err := exec.LookPath("python3")
	testenv.Need(t, "python3", err)
	f := benchFixture()
	ws := skillCreatorWorkspace(t, f)
	script, _ := filepath.Abs(filepath.Join(skillCreator, "scripts", "aggregate_benchmark.py"))
	out := filepath.Join(t.TempDir(), "theirs.json")
	cmd := exec.Command(py, script, ws, "--skill-name", "pdf", "-o", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("aggregate_benchmark.py: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var theirs map[string]any
	if err := json.Unmarshal(b, &theirs); err != nil {
		t.Fatal(err)
	}
	_, ours := benchmarkOf(t, f)

	ts, os_ := theirs["run_summary"].(map[string]any), ours["run_summary"].(map[string]any)
	for _, c := range []string{record.ConfigWithSkill, record.ConfigWithoutSkill} {
		for _, metric := range []string{"pass_rate", "time_seconds", "tokens"} {
			for _, k := range []string{"mean", "stddev", "min", "max"} {
				tv := ts[c].(map[string]any)[metric].(map[string]any)[k].(float64)
				ov := os_[c].(map[string]any)[metric].(map[string]any)[k].(float64)
				if math.Abs(tv-ov) > 1e-9 {
					t.Errorf("%s %s %s: skill-creator %v, harness %v", c, metric, k, tv, ov)
				}
			}
		}
	}
	if td, od := fmt.Sprint(ts["delta"]), fmt.Sprint(os_["delta"]); td != od {
		t.Errorf("delta: skill-creator %s, harness %s", td, od)
	}

	type key struct {
		id     float64
		config string
		run    float64
	}
	results := func(doc map[string]any) map[key]string {
		out := map[key]string{}
		for _, r := range doc["runs"].([]any) {
			r := r.(map[string]any)
			// Evidence is not compared: harness says in it that an item
			// was ungraded, which skill-creator's grading has no word for.
			var exps []string
			for _, e := range r["expectations"].([]any) {
				e := e.(map[string]any)
				exps = append(exps, fmt.Sprint(e["text"], e["passed"]))
			}
			out[key{r["eval_id"].(float64), r["configuration"].(string), r["run_number"].(float64)}] = fmt.Sprint(r["result"], exps)
		}
		return out
	}
	tr, or := results(theirs), results(ours)
	if len(tr) != len(or) || len(or) != len(f.gradings) {
		t.Fatalf("runs: skill-creator %d, harness %d", len(tr), len(or))
	}
	for k, v := range tr {
		if or[k] != v {
			t.Errorf("run %v:\nskill-creator %s\nharness       %s", k, v, or[k])
		}
	}
}

// TestBenchmarkInSkillCreatorViewer gives harness's benchmark.json to
// skill-creator's generate_review.py, then runs the viewer's own
// renderBenchmark over the page it wrote: the Benchmark tab shows
// harness's numbers.
func TestBenchmarkInSkillCreatorViewer(t *testing.T) {
	py, err := exec.LookPath("python3")
	testenv.Need(t, "python3", err)
	f := benchFixture()
	ws := skillCreatorWorkspace(t, f)
	raw, _ := benchmarkOf(t, f)
	page := reviewPage(t, py, ws, raw, "--skill-name", "pdf")

	deno, err := exec.LookPath("deno")
	testenv.Need(t, "deno", err)
	render := filepath.Join(t.TempDir(), "render.js")
	if err := os.WriteFile(render, []byte(renderJS), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(deno, "run", "--no-prompt", "--allow-read="+page, render, page).CombinedOutput()
	if err != nil {
		t.Fatalf("renderBenchmark: %v\n%s", err, out)
	}
	shown := string(out)
	missing := false
	for _, want := range []string{
		"<th>With Skill</th><th>Without Skill</th>",
		"79% ± 25%", "33% ± 24%", "+0.46", "+7.4s", "+912",
		"Fill the &lt;tax&gt; form", "Eval 2",
		"Output is a &lt;b&gt;PDF&lt;/b&gt; | `file`",
		"100% (2/2)", "Evals: 1, 2",
	} {
		if !strings.Contains(shown, want) {
			t.Errorf("the viewer does not show %q", want)
			missing = true
		}
	}
	for _, bad := range []string{"NaN", "undefined"} {
		if strings.Contains(shown, bad) {
			t.Errorf("the viewer shows %s", bad)
			missing = true
		}
	}
	if missing {
		t.Logf("the viewer's Benchmark tab:\n%s", shown)
	}
}

// renderJS runs the viewer page's renderBenchmark, as written, over its
// embedded data, with the two DOM calls it makes answered, and prints the
// HTML it renders.
const renderJS = `
const page = Deno.readTextFileSync(Deno.args[0]);
const data = page.match(/const EMBEDDED_DATA = (.*);\n/)[1];
const start = page.indexOf("function renderBenchmark()");
const end = page.indexOf("// ---- Start ----");
if (start < 0 || end < start) throw new Error("renderBenchmark not found in the page");
const elements = {};
const document = { getElementById: (id) => (elements[id] ??= { style: {}, innerHTML: "" }) };
const escapeHtml = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
const run = new Function("EMBEDDED_DATA", "document", "escapeHtml",
  page.slice(start, end) + "\nrenderBenchmark();");
run(JSON.parse(data), document, escapeHtml);
console.log(elements["benchmark-content"].innerHTML);
`

// TestBenchmarkCannotEndTheViewersScript: generate_review.py puts
// benchmark.json into its page inside a <script> element as json.dumps
// writes it, which escapes neither "<" nor "/". A grader's evidence or an
// expectation holding "</script>" would end that element and run what
// follows in the reviewer's browser; harness's benchmark.json must not
// carry one.
func TestBenchmarkCannotEndTheViewersScript(t *testing.T) {
	py, err := exec.LookPath("python3")
	testenv.Need(t, "python3", err)
	f := benchFixture()
	for i := range f.gradings {
		for j := range f.gradings[i].Expectations {
			f.gradings[i].Expectations[j].Evidence = `</SCRIPT ><script>alert(1)</script><!--<script>`
		}
	}
	f.m.Cells[0].EvalName = "</script><img src=x onerror=alert(2)>"
	f.gradings[0].Cell = f.m.Cells[0]
	// The workspace's own gradings (skill-creator's, shown in its other
	// tab) are kept clean: only benchmark.json is under test.
	clean := benchFixture()
	for i := range clean.gradings {
		for j := range clean.gradings[i].Expectations {
			clean.gradings[i].Expectations[j].Evidence = "seen"
		}
	}
	ws := skillCreatorWorkspace(t, clean)
	raw, _ := benchmarkOf(t, f)
	page := reviewPage(t, py, ws, raw)
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	template, err := os.ReadFile(filepath.Join(skillCreator, "eval-viewer", "viewer.html"))
	if err != nil {
		t.Fatal(err)
	}
	endTag := regexp.MustCompile(`(?i)</script[\s/>]|<!--`)
	if got, want := len(endTag.FindAll(b, -1)), len(endTag.FindAll(template, -1)); got != want {
		t.Errorf("the page has %d script end tags or comment openers, its template %d: benchmark.json's text ends the viewer's script", got, want)
		for _, m := range regexp.MustCompile(`(?i).{0,40}(</script[\s/>]|<!--).{0,40}`).FindAll(b, 20) {
			t.Logf("%s", m)
		}
	}
	// What was written is still there for a person to read.
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	run := doc["runs"].([]any)[0].(map[string]any)
	if name := run["eval_name"].(string); !strings.Contains(name, "script><img src=x onerror=alert(2)>") {
		t.Errorf("eval_name = %q", name)
	}
}

// reviewPage runs skill-creator's generate_review.py over the workspace
// ws and the benchmark raw, and returns the static page it wrote.
func reviewPage(t *testing.T, py, ws string, raw []byte, args ...string) string {
	t.Helper()
	bench := filepath.Join(t.TempDir(), "benchmark.json")
	if err := os.WriteFile(bench, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(t.TempDir(), "review.html")
	script, _ := filepath.Abs(filepath.Join(skillCreator, "eval-viewer", "generate_review.py"))
	argv := append(append([]string{script, ws}, args...), "--benchmark", bench, "--static", page)
	if b, err := exec.Command(py, argv...).CombinedOutput(); err != nil {
		t.Fatalf("generate_review.py: %v\n%s", err, b)
	}
	return page
}
