package schedule

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"
	batchv1 "k8s.io/api/batch/v1"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/harness-dev/harness/internal/testenv"
	"github.com/harness-dev/harness/kube"
	"github.com/harness-dev/harness/outcome"
)

// Names a skill's frontmatter can hold that are code in a shell, in jq,
// in YAML or in a GitHub expression.
var hostileNames = []string{
	`q'; touch PWNED; echo '`,
	`j\(env.HARNESS_API_KEY)`,
	`$(touch PWNED)`,
	"a\nb: c",
	"${{ secrets.OPENAI_API_KEY }}",
	"Upper",
	"--double",
}

// A skill whose name breaks the Agent Skills name rule is never
// scheduled: reading its schedule refuses it, and so does every
// generator given it.
func TestScheduleRefusesInvalidSkillNames(t *testing.T) {
	for _, name := range hostileNames {
		if _, err := Of(skill(name, map[string]any{"cron": "0 7 * * *", "prompt": "x"})); err == nil || !strings.Contains(err.Error(), "Agent Skills name rule") {
			t.Errorf("Of(%q) = %v, want a refusal", name, err)
		}
		e := &Entry{Skill: name, Cron: "0 7 * * *", Prompt: "x", Timezone: "UTC"}
		if _, err := GitHub([]*Entry{e}, GitHubOptions{}); err == nil || !strings.Contains(err.Error(), "Agent Skills name rule") {
			t.Errorf("GitHub(%q) = %v, want a refusal", name, err)
		}
		if _, err := K8s([]*Entry{e}, K8sOptions{Image: "i", Secret: "s"}); err == nil || !strings.Contains(err.Error(), "Agent Skills name rule") {
			t.Errorf("K8s(%q) = %v, want a refusal", name, err)
		}
	}
	e := &Entry{Skill: "ok", Cron: "0 7 * * *' || true || '", Prompt: "x", Timezone: "UTC"}
	if _, err := GitHub([]*Entry{e}, GitHubOptions{}); err == nil {
		t.Error("a cron with a quote was put into the workflow's expression")
	}
	if _, err := GitHub(entries(t), GitHubOptions{Secret: "X }}${{ github.token"}); err == nil {
		t.Error("a secret name that is not one was put into an expression")
	}
	if _, err := GitHub(entries(t), GitHubOptions{Args: []string{"--model", "${{ secrets.OTHER }}"}}); err == nil {
		t.Error("a run flag holding an expression was put into the workflow")
	}
}

// Prompts, roots and run flags that are code anywhere they could be
// pasted: the workflow lints, and its step, run by bash with the
// environment the workflow gives it, hands them to harness as they are
// and runs none of them.
var hostilePrompts = []string{
	`'; touch PWNED; echo '`,
	`$(touch PWNED) and ` + "`touch PWNED`",
	`\(env.HARNESS_API_KEY) "; touch PWNED; "`,
	"line one\nline two: {a: b}\n- item",
	`$(HARNESS_API_KEY) $HARNESS_API_KEY`,
}

func TestGitHubStepRunsHostileValuesInert(t *testing.T) {
	testenv.Need(t, "bash", lookPath("bash"))
	testenv.Need(t, "jq", lookPath("jq"))
	var es []*Entry
	for i, p := range hostilePrompts {
		es = append(es, &Entry{Skill: "skill-" + string(rune('a'+i)), Cron: "0 7 * * *", Prompt: p, Timezone: "UTC"})
	}
	o := GitHubOptions{SkillsRoots: []string{`skills/'$(touch PWNED)'`, "my skills"}, Args: []string{"--model", `gpt'; touch PWNED; '`, "$(touch PWNED)"}}
	b, err := GitHub(es, o)
	if err != nil {
		t.Fatal(err)
	}
	lint(t, b)
	w := decodeWorkflow(t, b)
	for _, e := range es {
		st := runStepOf(t, w, e.Skill)
		argv, summary := runStepForReal(t, st)
		want := []string{"run", "--workspace", ".", "--skills-root", o.SkillsRoots[0], "--skills-root", o.SkillsRoots[1], "--skill", e.Skill, "--prompt", e.Prompt,
			"--result-file", "result.json", "--output-last-message", "answer.md", o.Args[0], o.Args[1], o.Args[2]}
		if strings.Join(argv, "\x00") != strings.Join(want, "\x00") {
			t.Errorf("harness got %q, want %q", argv, want)
		}
		if !strings.Contains(summary, "### "+e.Skill+": failed (x), 2 turns, 7 tokens") {
			t.Errorf("summary = %q", summary)
		}
	}
}

// Even a name the rule refuses is data in the step: were it let through,
// the shell and jq would still read it as a value.
func TestGitHubStepNameIsData(t *testing.T) {
	testenv.Need(t, "bash", lookPath("bash"))
	testenv.Need(t, "jq", lookPath("jq"))
	for _, name := range hostileNames {
		if strings.Contains(name, "${{") {
			continue // GitHub's own expansion, which no shell shows; the rule refuses it
		}
		st := runStep(&Entry{Skill: name, Cron: "0 7 * * *", Prompt: "p", Timezone: "UTC"}, GitHubOptions{Secret: "OPENAI_API_KEY"})
		argv, summary := runStepForReal(t, st)
		if len(argv) < 6 || argv[4] != name {
			t.Errorf("harness got %q, want the skill %q", argv, name)
		}
		if want := "### " + name + ": failed"; !strings.Contains(summary, want) {
			t.Errorf("summary = %q, want %q", summary, want)
		}
	}
}

func lookPath(name string) error {
	_, err := exec.LookPath(name)
	return err
}

func lint(t *testing.T, b []byte) {
	t.Helper()
	l, err := actionlint.NewLinter(io.Discard, &actionlint.LinterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	errs, err := l.Lint("harness-schedules.yml", b, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range errs {
		t.Errorf("actionlint: %s", e.Error())
	}
	if t.Failed() {
		t.Logf("%s", b)
	}
}

func decodeWorkflow(t *testing.T, b []byte) workflow {
	t.Helper()
	var w workflow
	if err := sigsyaml.Unmarshal(b, &w); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	return w
}

func runStepOf(t *testing.T, w workflow, skill string) step {
	t.Helper()
	for _, st := range w.Jobs[jobID(skill)].Steps {
		if st.Name == "Run "+skill {
			return st
		}
	}
	t.Fatalf("no step runs %s", skill)
	return step{}
}

// runStepForReal runs a step's shell as GitHub's runner does (bash
// --noprofile --norc -eo pipefail FILE) with the step's environment, the
// secret a known value, and harness a program that records its argv and
// writes a result. It fails the test if anything the values hold ran or
// the key reached the summary; it returns harness's argv and the summary.
func runStepForReal(t *testing.T, st step) (argv []string, summary string) {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	work := filepath.Join(dir, "work")
	testenv.WriteTree(t, dir, map[string]string{
		"bin/harness": "#!/bin/bash\nprintf '%s\\0' \"$@\" > ../argv\n" +
			`printf '{"status":"failed","reason":"x","turns":2,"usage":{"totalTokens":7}}' > result.json` + "\nexit 1\n",
		"step.sh":    st.Run,
		"work/.keep": "",
	})
	if err := os.Chmod(filepath.Join(bin, "harness"), 0o755); err != nil {
		t.Fatal(err)
	}
	const key = "sk-the-real-key"
	env := []string{"PATH=" + bin + ":" + os.Getenv("PATH"), "GITHUB_STEP_SUMMARY=" + filepath.Join(dir, "summary.md"), "HOME=" + dir}
	for k, q := range st.Env {
		v := string(q)
		if strings.Contains(v, "${{") {
			if !strings.HasPrefix(v, "${{ secrets.") || k != "HARNESS_API_KEY" {
				t.Fatalf("env %s = %q: an expression other than the key's secret", k, v)
			}
			v = key
		}
		env = append(env, k+"="+v)
	}
	cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", filepath.Join(dir, "step.sh"))
	cmd.Dir, cmd.Env = work, env
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("the step exited %v, want harness's exit 1:\n%s", err, out)
	}
	for _, d := range []string{dir, work, bin} {
		if m, _ := filepath.Glob(filepath.Join(d, "PWNED*")); len(m) > 0 {
			t.Errorf("a value ran as code: %v\n%s", m, st.Run)
		}
	}
	a, err := os.ReadFile(filepath.Join(dir, "argv"))
	if err != nil {
		t.Fatalf("harness did not run: %v\n%s", err, out)
	}
	argv = strings.Split(strings.TrimSuffix(string(a), "\x00"), "\x00")
	s, _ := os.ReadFile(filepath.Join(dir, "summary.md"))
	if bytes.Contains(s, []byte(key)) || bytes.Contains(out, []byte(key)) {
		t.Errorf("the key reached the summary or the log: %q", s)
	}
	return argv, string(s)
}

// A prompt that names the key as a Kubernetes variable reaches harness
// as written: the CronJob's command is what the container receives once
// Kubernetes expands it with the container's variables.
func TestK8sCommandIsLiteral(t *testing.T) {
	var es []*Entry
	for i, p := range hostilePrompts {
		es = append(es, &Entry{Skill: "skill-" + string(rune('a'+i)), Cron: "0 7 * * *", Prompt: p, Timezone: "UTC"})
	}
	args := []string{"--model", "$(HARNESS_API_KEY)", "$$(XDG_CACHE_HOME)"}
	b, err := K8s(es, K8sOptions{Image: "registry.example/harness:1", Secret: "model-key", SkillsRoots: []string{"skills/$(HARNESS_API_KEY)"}, Args: args})
	if err != nil {
		t.Fatal(err)
	}
	eval, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, doc := range strings.Split(string(b), "\n---\n") {
		js, err := sigsyaml.YAMLToJSON([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(bytes.NewReader(js))
		dec.DisallowUnknownFields()
		var cj batchv1.CronJob
		if err := dec.Decode(&cj); err != nil {
			t.Fatalf("not a CronJob: %v\n%s", err, doc)
		}
		pod := cj.Spec.JobTemplate.Spec.Template
		if res := policy.AggregateCheckResults(eval.EvaluatePod(psaapi.LevelVersion{Level: psaapi.LevelRestricted, Version: psaapi.LatestVersion()}, &pod.ObjectMeta, &pod.Spec)); !res.Allowed {
			t.Errorf("not restricted: %s", strings.Join(res.ForbiddenDetails, "; "))
		}
		c := pod.Spec.Containers[0]
		vars := map[string]string{"HARNESS_API_KEY": "sk-the-real-key"}
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				vars[e.Name] = e.Value
			}
		}
		var got []string
		for _, w := range c.Command {
			got = append(got, kube.Expand(w, vars))
		}
		e := es[i]
		want := append([]string{"harness", "run", "--workspace", "/work", "--skills-root", "skills/$(HARNESS_API_KEY)", "--skill", e.Skill, "--prompt", e.Prompt,
			"--artifacts-dir", "/runs/" + e.Skill, "--result-file", "/runs/" + e.Skill + "/last-result.json"}, args...)
		if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
			t.Errorf("the container runs %q, want %q", got, want)
		}
	}
}

// A value a YAML reader could break a line at (U+2028, U+2029, U+0085,
// a carriage return) would let a prompt start keys of its own in the run
// step's env (HARNESS_BASE_URL, BASH_ENV); other control characters and
// invalid UTF-8 make the workflow unreadable or change on the way. Every
// such prompt, root and flag is refused; a prompt's lines are kept.
func TestGitHubRefusesControlCharacters(t *testing.T) {
	inject := "hi\u2028        HARNESS_BASE_URL:\u2028          https://evil.example"
	bad := []string{inject, "a\u2029b", "a\u0085b", "a\rb", "a\r\nb", "a\x00b", "\x1b[2J", "a\x7fb", "a\vb", "a\fb", "a\tb", "\xffa"}
	for _, v := range bad {
		for name, edit := range map[string]func(*Entry, *GitHubOptions){
			"prompt": func(e *Entry, o *GitHubOptions) { e.Prompt = v },
			"root":   func(e *Entry, o *GitHubOptions) { o.SkillsRoots = []string{"skills/" + v} },
			"flag":   func(e *Entry, o *GitHubOptions) { o.Args = []string{"--var", "x=" + v} },
		} {
			e, o := &Entry{Skill: "daily", Cron: "0 7 * * *", Prompt: "p", Timezone: "UTC"}, GitHubOptions{SkillsRoots: []string{"skills"}}
			edit(e, &o)
			b, err := GitHub([]*Entry{e}, o)
			if err == nil || outcome.As(err) == nil || outcome.As(err).Code != "schedule_value_control" {
				t.Errorf("%s %q: got %v, want schedule_value_control\n%s", name, v, err, b)
			}
			if _, err := K8s([]*Entry{e}, K8sOptions{Image: "img", Secret: "key", SkillsRoots: o.SkillsRoots, Args: o.Args}); err == nil {
				t.Errorf("schedule k8s: %s %q accepted", name, v)
			}
		}
	}
	if _, err := GitHub([]*Entry{{Skill: "daily", Cron: "0 7 * * *", Prompt: "p", Timezone: "UTC"}}, GitHubOptions{SkillsRoots: []string{"a\nb"}}); err == nil {
		t.Error("a root holding a newline was accepted")
	}
	e := &Entry{Skill: "daily", Cron: "0 7 * * *", Prompt: "Résumé the week.\nThen: list \"todos\" # all", Timezone: "UTC"}
	b, err := GitHub([]*Entry{e}, GitHubOptions{SkillsRoots: []string{"skills"}})
	if err != nil {
		t.Fatal(err)
	}
	lint(t, b)
	if got := runStepOf(t, decodeWorkflow(t, b), e.Skill).Env["SCHEDULED_PROMPT"]; string(got) != e.Prompt {
		t.Errorf("the prompt came back as %q, want %q", got, e.Prompt)
	}
}
