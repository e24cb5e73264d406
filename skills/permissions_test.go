package skills

import (
	"path"
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
		{"exec path", "{exec: [/bin/sh, /usr/local/go/pkg/tool/, $TMPDIR/]}", RiskHigh, ""},
		{"exec relative path", "{exec: [bin/sh]}", 0, "not a program name, an absolute path"},
		{"exec root", "{exec: [/]}", 0, "every program on the machine"},
		{"exec unclean", "{exec: [/usr/../tmp/]}", 0, "not a clean absolute path"},
		{"exec wildcard", "{exec: ['/usr/bin/*']}", 0, "wildcard"},
		{"exec other variable", "{exec: [$HOME/bin/]}", 0, "not a program name"},
		{"write wildcard", "{filesystem: {write: ['*']}}", 0, "wildcard character"},
		{"read wildcard", "{filesystem: {read: ['src/*.go']}}", 0, "wildcard character"},
		{"read class", "{filesystem: {read: ['out[12]']}}", 0, "wildcard character"},
		{"write brace", "{filesystem: {write: ['{a,b}']}}", 0, "wildcard character"},
		{"read question", "{filesystem: {read: ['a?']}}", 0, "wildcard character"},
		{"escape sequence", "{filesystem: {read: [\"a\\x1b[2Jb\"]}}", 0, "control character"},
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

func TestExecEntryOf(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want ExecEntry
		err  string
	}{
		{"go", ExecEntry{Name: "go"}, ""},
		{"python3.12", ExecEntry{Name: "python3.12"}, ""},
		{"/usr/bin/git", ExecEntry{Path: "/usr/bin/git"}, ""},
		{"/usr/local/go/pkg/tool/", ExecEntry{Path: "/usr/local/go/pkg/tool", Dir: true}, ""},
		{"$TMPDIR/", ExecEntry{Temp: true}, ""},
		{"$TMPDIR", ExecEntry{}, "not a program name"},
		{"/", ExecEntry{}, "every program"},
		{"//", ExecEntry{}, "every program"},
		{"/usr//bin/", ExecEntry{}, "not a clean"},
		{"/usr/./bin", ExecEntry{}, "not a clean"},
		{"/tmp/../usr/bin/", ExecEntry{}, "not a clean"},
		{"/usr/bin/[", ExecEntry{}, "wildcard"},
		{"/opt/$X/", ExecEntry{}, "wildcard or special"},
		{"./run.sh", ExecEntry{}, "not a program name"},
		{"-rf", ExecEntry{}, "not a program name"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ExecEntryOf(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ExecEntryOf(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			}
			if got.String() != tc.in {
				t.Errorf("String() = %q, want %q", got.String(), tc.in)
			}
		})
	}
}

// FuzzManifestPaths holds the manifest's path parsers to what the
// sandboxes rely on: an accepted workspace path is literal and stays in
// the workspace; an accepted exec entry is one of its forms, written back
// as it was read.
func FuzzManifestPaths(f *testing.F) {
	for _, s := range []string{".", "out/reports", "*", "a/../../x", "/etc", "go", "/usr/bin/git", "/usr/local/go/pkg/tool/", "$TMPDIR/", "/", "a\\b", "{a,b}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if checkRelPath(s) == nil {
			c := path.Clean(s)
			if strings.ContainsAny(s, globChars) || strings.HasPrefix(c, "/") || c == ".." || strings.HasPrefix(c, "../") {
				t.Fatalf("checkRelPath accepted %q", s)
			}
		}
		e, err := ExecEntryOf(s)
		if err != nil {
			return
		}
		if e.String() != s {
			t.Fatalf("ExecEntryOf(%q).String() = %q", s, e.String())
		}
		forms := 0
		for _, b := range []bool{e.Name != "", e.Path != "", e.Temp} {
			if b {
				forms++
			}
		}
		if forms != 1 {
			t.Fatalf("ExecEntryOf(%q) = %+v: not exactly one form", s, e)
		}
		if e.Path != "" && (path.Clean(e.Path) != e.Path || !path.IsAbs(e.Path) || e.Path == "/" || strings.ContainsAny(e.Path, globChars+"$")) {
			t.Fatalf("ExecEntryOf(%q) accepted path %q", s, e.Path)
		}
	})
}

// A destructive value that is not a boolean asks for a person rather than
// silently not: "yes" must not mean no.
func TestDestructiveFailsClosed(t *testing.T) {
	for _, tc := range []struct {
		v       any
		want    bool
		invalid bool
	}{
		{nil, false, false}, {true, true, false}, {false, false, false}, {"true", true, false}, {"false", false, false},
		{"yes", true, true}, {"no", true, true}, {1, true, true}, {[]any{"x"}, true, true},
	} {
		fm := map[string]any{"metadata": map[string]any{"harness": map[string]any{}}}
		if tc.v != nil {
			fm["metadata"].(map[string]any)["harness"].(map[string]any)["destructive"] = tc.v
		}
		if got := Destructive(fm); got != tc.want {
			t.Errorf("%v: Destructive = %v, want %v", tc.v, got, tc.want)
		}
		if got := DestructiveInvalid(fm) != ""; got != tc.invalid {
			t.Errorf("%v: invalid = %v, want %v", tc.v, got, tc.invalid)
		}
	}
}
