package skills

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/testenv"
)

func TestEligibility(t *testing.T) {
	bin := t.TempDir()
	os.WriteFile(filepath.Join(bin, "jq"), []byte("#!/bin/sh\n"), 0o755)
	os.Mkdir(filepath.Join(bin, "gh"), 0o755) // a directory named like the binary
	os.WriteFile(filepath.Join(bin, "noexec"), []byte("x"), 0o644)
	env := Environment{Path: bin, OS: "linux", Getenv: func(k string) string {
		return map[string]string{"SET": "v", "EMPTY": " "}[k]
	}}
	for _, tc := range []struct {
		name, meta string
		eligible   bool
		missing    string
		hints      string
	}{
		{"no requirements", "", true, "", ""},
		{"bin present", "openclaw:\n    requires:\n      bins: [jq]", true, "", ""},
		{"bin missing", "openclaw:\n    requires:\n      bins: [jq, rg]", false, "bins:rg", ""},
		{"directory named like the bin", "openclaw:\n    requires:\n      bins: [gh]", false, "bins:gh", ""},
		{"not executable", "openclaw:\n    requires:\n      bins: [noexec]", false, "bins:noexec", ""},
		{"anyBins one present", "openclaw:\n    requires:\n      anyBins: [rg, jq]", true, "", ""},
		{"anyBins none present", "openclaw:\n    requires:\n      anyBins: [rg, ag]", false, "anyBins:rg,ag", ""},
		{"env set", "openclaw:\n    requires:\n      env: [SET]", true, "", ""},
		{"env set but empty", "openclaw:\n    requires:\n      env: [EMPTY, UNSET]", false, "env:EMPTY,UNSET", ""},
		{"os mismatch", "openclaw:\n    os: [darwin]", false, "os:darwin", ""},
		{"legacy clawdbot name", "clawdbot:\n    requires:\n      bins: [rg]", false, "bins:rg", ""},
		{"generic metadata.requires", "requires:\n    bins: [rg]", false, "bins:rg", ""},
		{"install hints for this OS", "openclaw:\n    requires:\n      bins: [rg]\n    install:\n      - {kind: apt, package: ripgrep, bins: [rg], label: ripgrep}\n      - {kind: brew, formula: ripgrep}\n      - {kind: go, module: example.com/rg@latest}", false, "bins:rg",
			"sudo apt-get install -y ripgrep  # ripgrep|brew install ripgrep|go install example.com/rg@latest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			fm := "---\nname: a\ndescription: d\n"
			if tc.meta != "" {
				fm += "metadata:\n  " + tc.meta + "\n"
			}
			testenv.WriteTree(t, root, map[string]string{"a/SKILL.md": fm + "---\nbody\n"})
			reg, err := Scan(context.Background(), ScanOptions{Roots: []string{root}, Environment: env})
			testenv.Must(t, err)
			s, ok := reg.Lookup("a")
			if !ok {
				t.Fatalf("not loaded: %+v", reg.Diagnostics)
			}
			if s.IsEligible() != tc.eligible {
				t.Errorf("eligible = %v, want %v (missing %+v)", s.IsEligible(), tc.eligible, s.Missing)
			}
			var got []string
			if s.Missing != nil {
				for _, p := range []struct {
					k  string
					vs []string
				}{{"bins", s.Missing.Bins}, {"anyBins", s.Missing.AnyBins}, {"env", s.Missing.Env}, {"os", s.Missing.OS}} {
					if len(p.vs) > 0 {
						got = append(got, p.k+":"+strings.Join(p.vs, ","))
					}
				}
			}
			if strings.Join(got, ";") != tc.missing {
				t.Errorf("missing = %v, want %s", got, tc.missing)
			}
			if strings.Join(s.InstallHints, "|") != tc.hints {
				t.Errorf("hints = %q, want %q", s.InstallHints, tc.hints)
			}
			if !slices.Equal(reg.Eligibility.Path, []string{bin}) {
				t.Errorf("searched PATH not recorded: %v", reg.Eligibility.Path)
			}
			if !tc.eligible && slices.Contains(BuildCatalog(reg, 0).Names(), "a") {
				t.Error("an ineligible skill is in the catalog")
			}
		})
	}
}
