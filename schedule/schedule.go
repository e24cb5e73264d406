// Package schedule reads the schedules skills declare
// (metadata.harness.schedule) and prints them for the schedulers people
// already run: Kubernetes CronJobs and GitHub Actions workflows. harness
// itself is a batch command, never a daemon.
package schedule

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	_ "time/tzdata" // timezones resolve on a machine without them

	"github.com/robfig/cron/v3"

	"github.com/harness-dev/harness/kube"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/skills"
)

// Entry is one scheduled skill.
type Entry struct {
	Skill    string `json:"skill"`
	Cron     string `json:"cron"`
	Prompt   string `json:"prompt"`
	Timezone string `json:"timezone"`

	spec cron.Schedule
	loc  *time.Location
}

// fields name the five fields of a standard cron expression.
var fields = []string{"minute", "hour", "day of month", "month", "day of week"}

var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Of reads the schedule a skill declares: nil when it declares none.
func Of(s *skills.Skill) (*Entry, error) {
	meta, _ := s.Frontmatter["metadata"].(map[string]any)
	h, _ := meta["harness"].(map[string]any)
	raw, present := h["schedule"]
	if !present {
		return nil, nil
	}
	e, err := parse(s.Name, raw)
	if err != nil {
		return nil, fmt.Errorf("skill %s: metadata.harness.schedule: %w", s.Name, err)
	}
	return e, nil
}

// cronText is every character a cron expression or descriptor can hold:
// a cron is pasted into a GitHub expression's string, so it holds no quote.
var cronText = regexp.MustCompile(`^[0-9A-Za-z*/,?@ -]+$`)

// check refuses what no scheduler may be given as a skill's schedule: a
// name outside the Agent Skills name rule (1 to 64 lowercase letters,
// digits and single hyphens), which every generator puts into names,
// paths and job ids, or a cron with a character no cron holds.
// checkText refuses a prompt, root or flag the generated workflow or
// manifest could not carry as written (kube.CheckText): a line separator
// a YAML 1.1 reader breaks at would let a prompt add keys of its own to
// the run step's env. A prompt may hold lines; a root or a flag may not.
func checkText(entries []*Entry, roots, args []string) error {
	for _, e := range entries {
		if err := kube.CheckText(e.Prompt, true); err != nil {
			return outcome.Usage("schedule_value_control", "skill %s: its schedule's prompt is refused: %v; reword the prompt", e.Skill, err)
		}
	}
	for _, v := range append(append([]string{}, roots...), args...) {
		if err := kube.CheckText(v, false); err != nil {
			return outcome.Usage("schedule_value_control", "%v; give it without", err)
		}
	}
	return nil
}

func (e *Entry) check() error {
	if !skills.ValidName(e.Skill) {
		return outcome.Usage("schedule_skill_name_invalid", "skill %q cannot be scheduled: its name does not follow the Agent Skills name rule (1 to 64 lowercase letters, digits and single hyphens); rename it", e.Skill)
	}
	if !cronText.MatchString(e.Cron) {
		return outcome.Usage("schedule_cron_invalid", "skill %s: cron %q holds a character no cron expression has", e.Skill, e.Cron)
	}
	return nil
}

func parse(skill string, raw any) (*Entry, error) {
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("give a mapping: {cron: \"0 7 * * 1-5\", prompt: \"...\", timezone: \"UTC\"}")
	}
	e := &Entry{Skill: skill, Timezone: "UTC"}
	for k, v := range m {
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("%s must be a string", k)
		}
		switch k {
		case "cron":
			e.Cron = strings.TrimSpace(s)
		case "prompt":
			e.Prompt = s
		case "timezone":
			e.Timezone = s
		default:
			return nil, fmt.Errorf("%s is not a field of a schedule (cron, prompt, timezone)", k)
		}
	}
	if e.Cron == "" {
		return nil, fmt.Errorf("cron is missing: give five fields, such as \"0 7 * * 1-5\" (07:00 on weekdays)")
	}
	if strings.TrimSpace(e.Prompt) == "" {
		return nil, fmt.Errorf("prompt is missing: a scheduled run needs its task")
	}
	var err error
	if e.loc, err = time.LoadLocation(e.Timezone); err != nil {
		return nil, fmt.Errorf("timezone %q is not a time zone name such as UTC or Europe/Paris", e.Timezone)
	}
	if e.spec, err = parser.Parse(e.Cron); err != nil {
		return nil, fmt.Errorf("cron %q: %s", e.Cron, position(e.Cron, err))
	}
	if err := e.check(); err != nil {
		return nil, err
	}
	return e, nil
}

// position says which field of a cron expression is wrong: the parser's
// message, and the field it comes from when one can be told.
func position(expr string, err error) string {
	parts := strings.Fields(expr)
	if len(parts) != len(fields) || strings.HasPrefix(expr, "@") {
		return fmt.Sprintf("%v (give five fields: minute hour day-of-month month day-of-week)", err)
	}
	for i := range parts {
		probe := slices.Repeat([]string{"*"}, len(fields))
		probe[i] = parts[i]
		if _, perr := parser.Parse(strings.Join(probe, " ")); perr != nil {
			return fmt.Sprintf("field %d (%s) %q: %v", i+1, fields[i], parts[i], perr)
		}
	}
	return err.Error()
}

// Next are the n run times after t, in the schedule's time zone.
func (e *Entry) Next(t time.Time, n int) []time.Time {
	out := make([]time.Time, 0, n)
	t = t.In(e.loc)
	for range n {
		t = e.spec.Next(t)
		if t.IsZero() {
			break
		}
		out = append(out, t)
	}
	return out
}

// Entries are the schedules of a registry's skills, in name order, and
// the problems of those that declare one harness cannot read.
func Entries(reg *skills.Registry) ([]*Entry, []error) {
	var out []*Entry
	var errs []error
	for i := range reg.Skills {
		e, err := Of(&reg.Skills[i])
		switch {
		case err != nil:
			errs = append(errs, err)
		case e != nil:
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b *Entry) int { return strings.Compare(a.Skill, b.Skill) })
	return out, errs
}
