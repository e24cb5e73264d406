package tools

import (
	"encoding/json"
	"errors"

	"github.com/harness-dev/harness/loop"
	"github.com/harness-dev/harness/skills"
	"github.com/harness-dev/harness/workspace"
)

// Names are the tool names --allow-tool accepts.
var Names = []string{"find_skills", "list_files", "load_skill", "read_file", "read_skill_resource", "run_skill_script", "skills", "write_file", "delegate_task", "create_skill", "compose_skills", "run_command", "discover_skills", "install_skill"}

// ReadOnly are the read tools, always offered (a subagent profile may list
// them without the parent's permission).
var ReadOnly = []string{"find_skills", "list_files", "load_skill", "read_file", "read_skill_resource", "skills"}

// refusePath turns a workspace refusal into the result the model sees.
func refusePath(err error, record map[string]any) loop.ToolResult {
	r := workspace.AsRefusal(err)
	record["code"] = r.Code
	return loop.ErrorResult(r.Code, r.Msg, record)
}

// refuseSkill is a tool result for a refused skill operation.
func refuseSkill(err error, rec any) loop.ToolResult {
	var ref *skills.Refusal
	if errors.As(err, &ref) {
		return loop.ErrorResult(ref.Code, ref.Msg, rec)
	}
	return loop.ErrorResult("skill_error", err.Error(), rec)
}

func okResult(v any, record any) (loop.ToolResult, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return loop.ToolResult{}, err
	}
	return loop.ToolResult{Content: string(b), Status: loop.StatusOK, Record: record}, nil
}

func nonNil(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return xs
}
