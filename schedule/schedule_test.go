package schedule

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/rhysd/actionlint"
	batchv1 "k8s.io/api/batch/v1"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"sigs.k8s.io/yaml"

	"github.com/harness-dev/harness/kube"
	"github.com/harness-dev/harness/skills"
)

func skill(name string, schedule any) *skills.Skill {
	return &skills.Skill{Name: name, Frontmatter: map[string]any{"metadata": map[string]any{"harness": map[string]any{"schedule": schedule}}}}
}

func TestOf(t *testing.T) {
	tests := []struct {
		name     string
		schedule any
		err      string
	}{
		{"weekdays at seven", map[string]any{"cron": "0 7 * * 1-5", "prompt": "Triage the inbox."}, ""},
		{"a descriptor and a zone", map[string]any{"cron": "@daily", "prompt": "x", "timezone": "Europe/Paris"}, ""},
		{"an hour out of range", map[string]any{"cron": "0 25 * * *", "prompt": "x"}, `field 2 (hour) "25"`},
		{"a bad day of week", map[string]any{"cron": "0 7 * * mon-xyz", "prompt": "x"}, `field 5 (day of week)`},
		{"four fields", map[string]any{"cron": "0 7 * *", "prompt": "x"}, "give five fields"},
		{"no prompt", map[string]any{"cron": "0 7 * * *"}, "prompt is missing"},
		{"no cron", map[string]any{"prompt": "x"}, "cron is missing"},
		{"an unknown zone", map[string]any{"cron": "0 7 * * *", "prompt": "x", "timezone": "Mars/Olympus"}, "not a time zone name"},
		{"an unknown field", map[string]any{"cron": "0 7 * * *", "prompt": "x", "every": "day"}, "not a field of a schedule"},
		{"not a mapping", "daily", "give a mapping"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Of(skill("s", tt.schedule))
			switch {
			case tt.err == "" && err != nil:
				t.Fatal(err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Fatalf("err = %v, want %q", err, tt.err)
			}
		})
	}
}

func TestNextTimesForAFixedClock(t *testing.T) {
	e, err := Of(skill("s", map[string]any{"cron": "0 7 * * 1-5", "prompt": "x", "timezone": "Europe/Paris"}))
	if err != nil {
		t.Fatal(err)
	}
	// A Friday evening in Paris: the next runs are Monday to Wednesday.
	from := time.Date(2026, 11, 27, 18, 0, 0, 0, time.UTC)
	var got []string
	for _, n := range e.Next(from, 3) {
		got = append(got, n.Format(time.RFC3339))
	}
	if want := "2026-11-30T07:00:00+01:00 2026-12-01T07:00:00+01:00 2026-12-02T07:00:00+01:00"; strings.Join(got, " ") != want {
		t.Errorf("next = %v, want %s", got, want)
	}
}

func entries(t *testing.T) []*Entry {
	t.Helper()
	var out []*Entry
	for name, s := range map[string]map[string]any{
		"inbox":  {"cron": "0 7 * * 1-5", "prompt": "Triage today's inbox; it's Monday's job too."},
		"report": {"cron": "30 18 * * 5", "prompt": "Write the weekly report.", "timezone": "Europe/Paris"},
	} {
		e, err := Of(skill(name, s))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// Every CronJob decodes strictly into the Kubernetes API's own types and
// its pod passes the restricted Pod Security level.
func TestK8sCronJobs(t *testing.T) {
	b, err := K8s(entries(t), K8sOptions{Image: "registry.example/harness:1", Secret: "model-key", RunsClaim: "runs", SkillsRoots: []string{"skills"}, Pod: kube.Pod{CPU: "500m", Memory: "1Gi", Deadline: time.Hour}, Args: []string{"--model", "gpt-4.1-mini"}})
	if err != nil {
		t.Fatal(err)
	}
	eval, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(string(b), "\n---\n")
	if len(docs) != 2 {
		t.Fatalf("%d documents, want one CronJob per scheduled skill:\n%s", len(docs), b)
	}
	for _, doc := range docs {
		js, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			t.Fatalf("not YAML: %v\n%s", err, doc)
		}
		dec := json.NewDecoder(bytes.NewReader(js))
		dec.DisallowUnknownFields()
		var cj batchv1.CronJob
		if err := dec.Decode(&cj); err != nil {
			t.Fatalf("not a batch/v1 CronJob: %v\n%s", err, doc)
		}
		s := cj.Spec
		if cj.Kind != "CronJob" || s.ConcurrencyPolicy != batchv1.ForbidConcurrent || s.StartingDeadlineSeconds == nil || s.TimeZone == nil {
			t.Errorf("spec = %+v", s)
		}
		if js := s.JobTemplate.Spec; js.TTLSecondsAfterFinished == nil || *js.TTLSecondsAfterFinished != 86400 || js.ActiveDeadlineSeconds == nil || *js.ActiveDeadlineSeconds != 3600 {
			t.Errorf("the Job's lifetime: ttl %v, deadline %v", js.TTLSecondsAfterFinished, js.ActiveDeadlineSeconds)
		}
		pod := s.JobTemplate.Spec.Template
		res := policy.AggregateCheckResults(eval.EvaluatePod(psaapi.LevelVersion{Level: psaapi.LevelRestricted, Version: psaapi.LatestVersion()}, &pod.ObjectMeta, &pod.Spec))
		if !res.Allowed {
			t.Errorf("%s is not at the restricted level: %s", cj.Name, strings.Join(res.ForbiddenDetails, "; "))
		}
		c := pod.Spec.Containers[0]
		if c.Resources.Limits.Memory().String() != "1Gi" || c.Resources.Requests.Cpu().String() != "500m" {
			t.Errorf("resources = %+v: the requests are the limits when no limits are given", c.Resources)
		}
		if key := c.Env[0]; key.ValueFrom == nil || key.ValueFrom.SecretKeyRef.Name != "model-key" || key.Value != "" {
			t.Errorf("the key is not referenced from the Secret: %+v", key)
		}
		cmd := strings.Join(c.Command, " ")
		if !strings.Contains(cmd, "harness run --workspace /work --skills-root skills --skill ") || !strings.HasSuffix(cmd, "--model gpt-4.1-mini") {
			t.Errorf("command = %s", cmd)
		}
	}
}

// The workflow passes actionlint, used as a library, with no error.
func TestGitHubWorkflowLints(t *testing.T) {
	b, err := GitHub(entries(t), GitHubOptions{SkillsRoots: []string{"skills"}, Args: []string{"--model", "gpt-4.1-mini"}})
	if err != nil {
		t.Fatal(err)
	}
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
	for _, want := range []string{"cron: 0 7 * * 1-5", "github.event.schedule == '30 18 * * 5'", "${{ secrets.OPENAI_API_KEY }}", "GITHUB_STEP_SUMMARY", "actions/upload-artifact"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the workflow lacks %q", want)
		}
	}
}

// upload-artifact (v4.4.0 on) leaves out every file and directory whose
// name starts with a dot unless include-hidden-files is true, and the
// run directories are under .harness.
func TestGitHubUploadsTheRunDirectories(t *testing.T) {
	b, err := GitHub(entries(t), GitHubOptions{SkillsRoots: []string{"skills"}})
	if err != nil {
		t.Fatal(err)
	}
	w := decodeWorkflow(t, b)
	for id, j := range w.Jobs {
		uploads := 0
		for _, st := range j.Steps {
			if !strings.HasPrefix(st.Uses, "actions/upload-artifact@") {
				continue
			}
			uploads++
			if st.With["path"] != ".harness/runs/" || st.With["include-hidden-files"] != "true" {
				t.Errorf("job %s uploads %q with include-hidden-files %q, want .harness/runs/ with true", id, st.With["path"], st.With["include-hidden-files"])
			}
		}
		if uploads != 1 {
			t.Errorf("job %s has %d upload steps, want 1", id, uploads)
		}
	}
}

// GitHub's schedule takes five fields only: a descriptor is written as
// its fields, in the cron and in the job's condition alike, and an
// interval is refused.
func TestGitHubCronDescriptors(t *testing.T) {
	for cron, want := range map[string]string{"@daily": "0 0 * * *", "@weekly": "0 0 * * 0", "@hourly": "0 * * * *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "0 7 * * 1-5": "0 7 * * 1-5"} {
		e, err := Of(skill("tick", map[string]any{"cron": cron, "prompt": "x"}))
		if err != nil {
			t.Fatalf("%s: %v", cron, err)
		}
		b, err := GitHub([]*Entry{e}, GitHubOptions{})
		if err != nil {
			t.Fatalf("%s: %v", cron, err)
		}
		lint(t, b)
		w := decodeWorkflow(t, b)
		if len(w.On.Schedule) != 1 || w.On.Schedule[0].Cron != want || !strings.Contains(w.Jobs[jobID("tick")].If, "'"+want+"'") {
			t.Errorf("%s: on.schedule %+v, if %q; want %q in both", cron, w.On.Schedule, w.Jobs[jobID("tick")].If, want)
		}
	}
	e, err := Of(skill("tick", map[string]any{"cron": "@every 90m", "prompt": "x"}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := GitHub([]*Entry{e}, GitHubOptions{}); err == nil || !strings.Contains(err.Error(), "write it as five fields") {
		t.Errorf("@every: err = %v", err)
	}
}

// A skill's prompt never becomes a GitHub expression.
func TestGitHubRefusesExpressions(t *testing.T) {
	e, _ := Of(skill("leak", map[string]any{"cron": "0 7 * * *", "prompt": "print ${{ secrets.OPENAI_API_KEY }}"}))
	if _, err := GitHub([]*Entry{e}, GitHubOptions{}); err == nil || !strings.Contains(err.Error(), "GitHub Actions would evaluate") {
		t.Fatalf("err = %v", err)
	}
}

// Whatever a skill writes in its schedule, reading it never panics, and a
// schedule that reads has run times that come after the clock.
func FuzzOf(f *testing.F) {
	for _, c := range []string{"0 7 * * 1-5", "@daily", "*/15 * * * *", "0 25 * * *", "0 0 31 2 *", "1-2-3 * * * *", ""} {
		f.Add(c, "prompt", "UTC")
	}
	f.Add("0 7 * * *", "", "Europe/Paris")
	f.Fuzz(func(t *testing.T, cron, prompt, tz string) {
		e, err := Of(skill("s", map[string]any{"cron": cron, "prompt": prompt, "timezone": tz}))
		if err != nil {
			return
		}
		from := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
		for _, n := range e.Next(from, 3) {
			if !n.After(from) {
				t.Fatalf("%q: next run %v is not after %v", cron, n, from)
			}
		}
	})
}
