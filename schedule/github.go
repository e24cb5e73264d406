package schedule

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/harness-dev/harness/outcome"
)

// GitHubOptions are what `harness schedule github` needs beyond the
// schedules.
type GitHubOptions struct {
	// SkillsRoots are the roots in the repository, as given; Args are more
	// flags of every `harness run`; Secret names the repository secret
	// that holds the API key.
	SkillsRoots []string
	Args        []string
	Secret      string
}

type workflow struct {
	Name        string         `yaml:"name"`
	On          workflowOn     `yaml:"on"`
	Permissions map[string]any `yaml:"permissions"`
	Jobs        map[string]job `yaml:"jobs"`
}

type workflowOn struct {
	Schedule         []cronEntry    `yaml:"schedule"`
	WorkflowDispatch map[string]any `yaml:"workflow_dispatch"`
}

type cronEntry struct {
	Cron     string `yaml:"cron"`
	Timezone string `yaml:"timezone,omitempty"`
}

type job struct {
	Name    string `yaml:"name"`
	If      string `yaml:"if"`
	RunsOn  string `yaml:"runs-on"`
	Timeout int    `yaml:"timeout-minutes"`
	Steps   []step `yaml:"steps"`
}

type step struct {
	Name string            `yaml:"name,omitempty"`
	Uses string            `yaml:"uses,omitempty"`
	If   string            `yaml:"if,omitempty"`
	With map[string]string `yaml:"with,omitempty"`
	Env  map[string]quoted `yaml:"env,omitempty"`
	Run  string            `yaml:"run,omitempty"`
}

// quoted is a value written as a double-quoted scalar whatever it holds.
// A plain or literal block scalar cannot carry every text: a literal
// block whose first line starts with a space needs an indentation
// indicator the encoder does not write, and trailing blank or spaced
// lines are dropped by its chomping. A double-quoted scalar escapes them.
type quoted string

func (q quoted) MarshalYAML() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	// A JSON string is a YAML double-quoted scalar; HTML escaping would
	// only make it harder to read.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(string(q)); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// GitHub prints a GitHub Actions workflow: the skills' crons on schedule
// (and by hand), one job per skill that runs only at its own cron, the
// key from the repository's secrets, result.json summarised into the job
// summary and the run directory uploaded.
//
// Nothing a skill or the command line gives becomes code: the step's
// shell and its jq program are fixed text, and the skill's name, its
// prompt, the roots and the run flags reach them as environment variables
// (the name to jq as --arg). GitHub evaluates "${{" in every string of a
// step, env values included, so no value may hold one.
func GitHub(entries []*Entry, o GitHubOptions) ([]byte, error) {
	if len(entries) == 0 {
		return nil, outcome.Usage("schedule_none", "no skill under the roots declares a schedule (metadata.harness.schedule)")
	}
	if o.Secret == "" {
		o.Secret = "OPENAI_API_KEY"
	}
	if !secretName.MatchString(o.Secret) {
		return nil, outcome.Usage("schedule_secret_invalid", "--secret %q is not a GitHub secret name (letters, digits and '_', not starting with a digit)", o.Secret)
	}
	for _, v := range append(append([]string{}, o.SkillsRoots...), o.Args...) {
		if strings.Contains(v, "${{") {
			return nil, outcome.Usage("schedule_expression", "%q holds \"${{\", which GitHub Actions would evaluate (it could read the workflow's secrets)", v)
		}
	}
	if err := checkText(entries, o.SkillsRoots, o.Args); err != nil {
		return nil, err
	}
	w := workflow{Name: "harness schedules", Permissions: map[string]any{"contents": "read"}, Jobs: map[string]job{},
		On: workflowOn{WorkflowDispatch: map[string]any{}}}
	for _, e := range entries {
		if err := e.check(); err != nil {
			return nil, err
		}
		if strings.Contains(e.Prompt, "${{") {
			return nil, outcome.Usage("schedule_prompt_expression", "skill %s: its schedule's prompt holds \"${{\", which GitHub Actions would evaluate (it could read the workflow's secrets); reword the prompt", e.Skill)
		}
		cron, err := githubCron(e)
		if err != nil {
			return nil, err
		}
		w.On.Schedule = append(w.On.Schedule, cronEntry{Cron: cron, Timezone: tzOrEmpty(e.Timezone)})
		w.Jobs[jobID(e.Skill)] = job{
			Name: "harness " + e.Skill,
			// One workflow holds every cron: each job runs at its own (or
			// by hand). The cron was checked to hold no quote.
			If:     fmt.Sprintf("github.event_name == 'workflow_dispatch' || github.event.schedule == '%s'", cron),
			RunsOn: "ubuntu-latest", Timeout: 60,
			Steps: []step{
				{Uses: "actions/checkout@v4"},
				{Uses: "actions/setup-go@v5", With: map[string]string{"go-version": "stable"}},
				{Name: "Install harness", Run: "go install github.com/harness-dev/harness/cmd/harness@latest github.com/harness-dev/harness/cmd/harness-sandbox@latest\nsudo apt-get install -y bubblewrap"},
				runStep(e, o),
				// upload-artifact leaves out hidden files and directories
				// unless told (v4.4.0 on); the run directories are under
				// .harness.
				{Uses: "actions/upload-artifact@v4", If: "always()", With: map[string]string{"name": "harness-" + e.Skill, "path": ".harness/runs/", "include-hidden-files": "true"}},
			},
		}
	}
	b, err := yaml.MarshalWithOptions(w, yaml.UseLiteralStyleIfMultiline(true))
	if err != nil {
		return nil, err
	}
	return append([]byte("# Generated by harness schedule github from the skills' metadata.harness.schedule.\n"), b...), nil
}

// descriptors are the cron descriptors as the five fields they stand
// for: GitHub's schedule takes only fields.
var descriptors = map[string]string{
	"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
	"@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}

// githubCron is e's cron as GitHub's schedule takes it: a descriptor
// written as its fields; an interval (@every) has no such form.
func githubCron(e *Entry) (string, error) {
	if !strings.HasPrefix(e.Cron, "@") {
		return e.Cron, nil
	}
	if c, ok := descriptors[e.Cron]; ok {
		return c, nil
	}
	return "", outcome.Usage("schedule_cron_github", "skill %s: cron %q has no form GitHub Actions' schedule takes (five fields, or @hourly, @daily, @weekly, @monthly, @yearly); write it as five fields", e.Skill, e.Cron)
}

// secretName is GitHub's rule for a secret's name.
var secretName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// runStep is the step that runs the skill: fixed shell text reading every
// value from the step's environment. (The names are not HARNESS_*:
// harness reads those as its own settings.)
func runStep(e *Entry, o GitHubOptions) step {
	env := map[string]quoted{
		"HARNESS_API_KEY":  quoted("${{ secrets." + o.Secret + " }}"),
		"SCHEDULED_SKILL":  quoted(e.Skill),
		"SCHEDULED_PROMPT": quoted(e.Prompt),
	}
	var roots, args strings.Builder
	for i, r := range o.SkillsRoots {
		name := fmt.Sprintf("SCHEDULED_SKILLS_ROOT_%d", i)
		env[name] = quoted(r)
		fmt.Fprintf(&roots, " --skills-root \"$%s\"", name)
	}
	for i, a := range o.Args {
		name := fmt.Sprintf("SCHEDULED_ARG_%d", i)
		env[name] = quoted(a)
		fmt.Fprintf(&args, " \"$%s\"", name)
	}
	run := "set +e\n" +
		"harness run --workspace ." + roots.String() + " --skill \"$SCHEDULED_SKILL\" --prompt \"$SCHEDULED_PROMPT\" \\\n" +
		"  --result-file result.json --output-last-message answer.md" + args.String() + "\n" +
		"code=$?\n" +
		`jq -r --arg skill "$SCHEDULED_SKILL" '"### \($skill): \(.status) (\(.reason)), \(.turns) turns, \(.usage.totalTokens) tokens"' result.json >> "$GITHUB_STEP_SUMMARY"` + "\n" +
		"exit $code"
	return step{Name: "Run " + e.Skill, Env: env, Run: run}
}

// tzOrEmpty leaves UTC, GitHub's default, unsaid.
func tzOrEmpty(tz string) string {
	if tz == "UTC" {
		return ""
	}
	return tz
}

func jobID(skill string) string { return "run-" + skill }
