package schedule

import (
	"io"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"
	yaml3 "go.yaml.in/yaml/v3"
)

// awkwardPrompts are texts a YAML scalar carries badly: leading or
// trailing spaces, blank lines, document markers, indicators, BOMs and
// noncharacters, expression lookalikes.
var awkwardPrompts = []string{
	"  leading spaces\nsecond",
	"\nleading newline",
	"x\n\n\n",
	"trailing spaces   ",
	"x\n  \n",
	"---\nHARNESS_BASE_URL: https://evil",
	"a\n---\nb",
	"a\n...\nb",
	"# just a comment",
	"|\n  x",
	"> folded",
	"&a *a",
	"!!binary aGk=",
	"%YAML 1.1\n---",
	"key: value",
	"- item",
	"\uFEFFbom",
	"a\uFEFFb",
	"a\uFFFEb",
	"a\uFFFFb",
	"a\U0001F600b",
	"\u00a0nbsp",
	"a\u200bb",
	"$ {{ secrets.X }}",
	"${ { secrets.X }}",
	"\\${{ secrets.X }}",
	"${\u200b{ secrets.X }}",
	"$\n{{ secrets.X }}",
	"${{",
	"}}",
	"'\"",
	"@daily",
	"yes",
	"~",
	"null",
	"0x10",
	"1e3",
	"=",
	"<<",
	"  ",
	"x\n ",
	" x",
	"x\t",
	"\u0020\u000a\u0020",
}

// TestGitHubPromptRoundTrip prints a workflow for each awkward prompt:
// actionlint and yaml.v3 must read it, and the step's environment must
// give the prompt back as written, or the prompt must be refused.
func TestGitHubPromptRoundTrip(t *testing.T) {
	l, _ := actionlint.NewLinter(io.Discard, &actionlint.LinterOptions{})
	for _, p := range awkwardPrompts {
		e := &Entry{Skill: "daily", Cron: "0 7 * * *", Prompt: p, Timezone: "UTC"}
		b, err := GitHub([]*Entry{e}, GitHubOptions{SkillsRoots: []string{"skills"}})
		if err != nil {
			t.Logf("github %q: refused: %v", p, err)
			continue
		}
		errs, err := l.Lint("w.yml", b, nil)
		if err != nil || len(errs) > 0 {
			t.Errorf("github %q: actionlint: %v %v\n%s", p, err, errs, b)
		}
		var w struct {
			Jobs map[string]struct {
				Steps []struct {
					Env map[string]string `yaml:"env"`
				} `yaml:"steps"`
			} `yaml:"jobs"`
		}
		if err := yaml3.Unmarshal(b, &w); err != nil {
			t.Errorf("github %q: yaml.v3: %v\n%s", p, err, b)
			continue
		}
		env := w.Jobs["run-daily"].Steps[3].Env
		if env["SCHEDULED_PROMPT"] != p {
			t.Errorf("github %q: round trip gives %q\n%s", p, env["SCHEDULED_PROMPT"], b)
		}
		if len(env) != 4 {
			t.Errorf("github %q: env keys %v", p, env)
		}
	}
}

// TestNoncharacterRefused: U+FFFE and U+FFFF are outside YAML's printable
// set, so a prompt holding one is refused with a code, on both targets.
func TestNoncharacterRefused(t *testing.T) {
	for _, p := range []string{"a\uFFFEb", "a\uFFFFb"} {
		e := &Entry{Skill: "daily", Cron: "0 7 * * *", Prompt: p, Timezone: "UTC"}
		if _, err := GitHub([]*Entry{e}, GitHubOptions{SkillsRoots: []string{"skills"}}); err == nil || !strings.Contains(err.Error(), "noncharacter") {
			t.Errorf("github %q: %v, want a noncharacter refusal", p, err)
		}
		if _, err := K8s([]*Entry{e}, K8sOptions{Image: "i", Secret: "s"}); err == nil || !strings.Contains(err.Error(), "noncharacter") {
			t.Errorf("k8s %q: %v, want a noncharacter refusal", p, err)
		}
	}
}
