package tools

import (
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/skills"
)

// A call of a skill's MCP server is always bounded: by the skill's own
// limit, else by harness's default, and the refusal says which.
func TestSkillCallTimeout(t *testing.T) {
	for _, tc := range []struct {
		l    *skills.ExecLimits
		want time.Duration
		says string
	}{
		{nil, DefaultSkillMCPCallTimeout, "harness's default"},
		{&skills.ExecLimits{MaxTurns: 3}, DefaultSkillMCPCallTimeout, "harness's default"},
		{&skills.ExecLimits{Timeout: 30 * time.Second}, 30 * time.Second, "limits.timeout 30s"},
	} {
		got, source := skillCallTimeout(tc.l)
		if got != tc.want || !strings.Contains(source, tc.says) {
			t.Errorf("skillCallTimeout(%+v) = %v, %q; want %v, %q", tc.l, got, source, tc.want, tc.says)
		}
	}
}
