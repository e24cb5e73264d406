package main

import (
	"runtime/debug"
	"testing"
)

func TestVersionFrom(t *testing.T) {
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	for _, c := range []struct {
		name   string
		bi     *debug.BuildInfo
		ldflag stamp
		want   string
	}{
		{"no build info", nil, stamp{}, "0.1.0-dev"},
		{"ldflags win", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, stamp{version: "9.9.9"}, "9.9.9"},
		{"go install @version", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, stamp{}, "v1.2.3"},
		{"a clone, clean", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("0123456789abcdef0123", "false")}, stamp{}, "0.1.0-dev+0123456789ab"},
		{"a clone, dirty", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("0123456789abcdef0123", "true")}, stamp{}, "0.1.0-dev+0123456789ab-dirty"},
		{"stamped, no build info", nil, stamp{revision: "0123456789abcdef0123", modified: "false"}, "0.1.0-dev+0123456789ab"},
		{"stamped, -buildvcs=false", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, stamp{revision: "0123456789abcdef0123", modified: "true"}, "0.1.0-dev+0123456789ab-dirty"},
		{"a test binary", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, stamp{}, "0.1.0-dev"},
	} {
		if got := versionFrom(c.bi, c.ldflag); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
