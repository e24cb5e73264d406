package skills

import (
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

func fmOf(t *testing.T, perms string) map[string]any {
	t.Helper()
	var fm map[string]any
	if err := yaml.Unmarshal([]byte("name: x\nmetadata:\n  harness:\n    permissions: "+perms+"\n"), &fm); err != nil {
		t.Fatal(err)
	}
	return fm
}

func TestPermissionsOf(t *testing.T) {
	for _, tc := range []struct {
		name, perms string
		want        Risk
		err         string
	}{
		{"empty mapping", "{}", RiskMinimal, ""},
		{"read", "{filesystem: {read: [data]}}", RiskLow, ""},
		{"env", "{env: [API_TOKEN]}", RiskLow, ""},
		{"write", "{filesystem: {read: [.], write: [out/reports]}}", RiskModerate, ""},
		{"network", "{network: ['api.example.com:443', '127.0.0.1:8080', 'example.org']}", RiskModerate, ""},
		{"exec", "{exec: [bash]}", RiskHigh, ""},
		{"credentials", "{credentials: true, network: [api.example.com]}", RiskHigh, ""},
		{"two high", "{exec: [curl], credentials: true}", RiskCritical, ""},
		{"not a mapping", "[read]", 0, "must be a mapping"},
		{"unknown field", "{shell: true}", 0, `unknown field "shell"`},
		{"absolute path", "{filesystem: {read: [/etc]}}", 0, "must be relative"},
		{"escaping path", "{filesystem: {write: [a/../../x]}}", 0, "leaves the workspace"},
		{"wildcard host", "{network: ['*.example.com']}", 0, "is not host[:port]"},
		{"scheme", "{network: ['https://example.com']}", 0, "is not host[:port]"},
		{"bad port", "{network: ['example.com:99999']}", 0, "port must be 1-65535"},
		{"bad env", "{env: ['A-B']}", 0, "not an environment variable name"},
		{"exec path", "{exec: [/bin/sh]}", 0, "not a binary name"},
		{"credentials string", "{credentials: 'yes'}", 0, "true or false"},
		{"non-string entry", "{env: [1]}", 0, "non-empty string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := PermissionsOf(fmOf(t, tc.perms))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := RiskOf(p, nil); got != tc.want {
				t.Errorf("risk = %s, want %s", got, tc.want)
			}
		})
	}
	if p, err := PermissionsOf(map[string]any{"name": "x"}); p != nil || err != nil {
		t.Errorf("no manifest = %v, %v", p, err)
	}
}

func TestFindingsRaiseRisk(t *testing.T) {
	read := &Permissions{Filesystem: FilesystemPermissions{Read: []string{"."}}}
	for _, tc := range []struct {
		sev  []string
		want Risk
	}{
		{nil, RiskLow},
		{[]string{"medium"}, RiskModerate},
		{[]string{"medium", "high"}, RiskHigh},
		{[]string{"critical"}, RiskCritical},
	} {
		if got := RiskOf(read, tc.sev); got != tc.want {
			t.Errorf("RiskOf(read, %v) = %s, want %s", tc.sev, got, tc.want)
		}
	}
	if RiskOf(nil, nil) != RiskUndeclared {
		t.Error("no manifest is not undeclared")
	}
	if RiskOf(&Permissions{}, nil) != RiskMinimal {
		t.Error("an empty manifest is not minimal")
	}
	if RiskOf(nil, []string{"high"}) != RiskHigh || RiskOf(nil, []string{"medium"}) != RiskUndeclared {
		t.Error("findings do not raise an undeclared skill as they should")
	}
	for _, name := range []string{"minimal", "low", "moderate", "undeclared", "high", "critical"} {
		r, err := ParseRisk(name)
		if err != nil || r.String() != name {
			t.Errorf("ParseRisk(%s) = %v, %v", name, r, err)
		}
	}
	if _, err := ParseRisk("none"); err == nil {
		t.Error("ParseRisk accepted none")
	}
}
