package gate

import (
	"testing"

	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/skills"
)

// TestDestructiveSkillCallsWait: every call of a destructive skill's code
// waits, including the tools of a skill with several MCP servers, whose
// keys are <skill>-<server> and name no skill.
func TestDestructiveSkillCallsWait(t *testing.T) {
	destructive := map[string]any{"metadata": map[string]any{"harness": map[string]any{"destructive": true}}}
	reg := &skills.Registry{Skills: []skills.Skill{{Name: "ops", Frontmatter: destructive}, {Name: "notes"}}}
	servers := map[string]string{"ops": "ops", "ops-db": "ops", "ops-queue": "ops", "notes": "notes"}
	a := NewApprovals(nil, func() *skills.Registry { return reg }, nil, nil)
	a.MCPSkill = func(exposed string) (string, bool) {
		for key, skill := range servers {
			if len(exposed) > len(key)+2 && exposed[:len(key)+2] == key+"__" {
				return skill, true
			}
		}
		return "", false
	}
	for _, tc := range []struct {
		call loop.ToolCall
		want loop.Approval
	}{
		{loop.ToolCall{ID: "a", Name: "ops__deploy", Arguments: "{}"}, loop.Wait},
		{loop.ToolCall{ID: "b", Name: "ops-db__drop", Arguments: "{}"}, loop.Wait},
		{loop.ToolCall{ID: "c", Name: "ops-queue__purge", Arguments: "{}"}, loop.Wait},
		{loop.ToolCall{ID: "d", Name: "run_skill_script", Arguments: `{"skill": "ops", "path": "scripts/x.sh"}`}, loop.Wait},
		{loop.ToolCall{ID: "e", Name: "notes__add", Arguments: "{}"}, loop.Proceed},
		{loop.ToolCall{ID: "f", Name: "read_file", Arguments: `{"path": "a"}`}, loop.Proceed},
	} {
		t.Run(tc.call.Name, func(t *testing.T) {
			if got, _ := a.Approve(1, tc.call, loop.EffectSideEffect); got != tc.want {
				t.Errorf("Approve(%s) = %v, want %v", tc.call.Name, got, tc.want)
			}
		})
	}
}
