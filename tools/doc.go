// Package tools holds every tool the model is offered: the workspace file
// tools, the skill tools (load_skill, read_skill_resource, skills),
// run_skill_script and delegate_task. Each is a loop.Tool whose
// dependencies are handed in explicitly; none of them sees the whole run.
//
// tools never imports run or the CLI: delegation reaches a child run
// through the ChildRunner interface that run implements.
package tools
