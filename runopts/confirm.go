package runopts

import (
	"path"
	"slices"
	"strings"

	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/tools"
)

// checkConfirmTools refuses a --confirm-tool pattern that can match no
// tool: a misspelt name would make nothing wait for a person, silently.
// What is known before the run starts is checked here: the pattern's
// syntax, and a pattern for a built-in tool. An MCP tool (KEY__TOOL) is
// left to the run, which knows the servers once the skills are scanned
// (tools.CheckMCPConfirmed); its TOOL only once its server lists it.
func checkConfirmTools(o *Options) error {
	for _, p := range o.ConfirmTools {
		if _, err := path.Match(p, ""); err != nil || p == "" {
			return outcome.Usage("confirm_tool_invalid", "--confirm-tool %q is not a valid pattern: give a tool name (write_file), or a glob such as write_* or KEY__*", p)
		}
		if strings.Contains(p, tools.MCPSeparator) {
			continue
		}
		if slices.ContainsFunc(tools.Names, func(n string) bool { ok, _ := path.Match(p, n); return ok }) {
			continue
		}
		names := slices.Sorted(slices.Values(tools.Names))
		msg := "--confirm-tool " + p + " names no tool"
		if near := outcome.Nearest(p, names); near != "" {
			msg += " (did you mean " + near + "?)"
		}
		return outcome.Usage("confirm_tool_unknown", "%s; built-in tools: %s; an MCP server's tool is KEY__TOOL (KEY__* for all of one server's)", msg, strings.Join(names, ", "))
	}
	return nil
}
