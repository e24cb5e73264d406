package skills

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestStrictFollowsTheSpecification: what the specification's text says
// a skill must be, as `skills validate --strict` reports it.
func TestStrictFollowsTheSpecification(t *testing.T) {
	for _, c := range []struct {
		name, skillMD string
		files         map[string]string
		strict        bool
		code, sev     string // "" code: no diagnostic of that code expected at all
		absent        string
	}{
		{name: "name with no value", skillMD: "---\nname:\ndescription: Does d. Use for d.\n---\nx\n", strict: true, code: CodeNameMissing, sev: SeverityError},
		{name: "empty name", skillMD: "---\nname: \"\"\ndescription: Does d. Use for d.\n---\nx\n", strict: true, code: CodeNameMissing, sev: SeverityError},
		{name: "compatibility not a string", skillMD: "---\nname: s\ndescription: Does d. Use for d.\ncompatibility: [linux]\n---\nx\n", strict: true, code: CodeFieldType, sev: SeverityError, absent: CodeFieldTooLong},
		{name: "allowed-tools a list, strict", skillMD: "---\nname: s\ndescription: Does d. Use for d.\nallowed-tools: [Read, Bash]\n---\nx\n", strict: true, code: CodeFieldType, sev: SeverityError},
		{name: "allowed-tools a list, lenient", skillMD: "---\nname: s\ndescription: Does d. Use for d.\nallowed-tools: [Read, Bash]\n---\nx\n", code: CodeFieldType, sev: SeverityWarning},
		{name: "metadata value a number, strict", skillMD: "---\nname: s\ndescription: Does d. Use for d.\nmetadata:\n  version: 1.2\n---\nx\n", strict: true, code: CodeFieldType, sev: SeverityError},
		{name: "metadata value a list, lenient", skillMD: "---\nname: s\ndescription: Does d. Use for d.\nmetadata:\n  tags: [a, b]\n---\nx\n", code: CodeFieldType, sev: SeverityWarning},
		{name: "metadata strings", skillMD: "---\nname: s\ndescription: Does d. Use for d.\nmetadata:\n  version: \"1.2\"\n---\nx\n", strict: true, absent: CodeFieldType},
		{name: "metadata.harness, strict: a note", skillMD: "---\nname: s\ndescription: Does d. Use for d.\nmetadata:\n  harness:\n    permissions: {filesystem: {read: [docs]}}\n---\nx\n", strict: true, code: CodeFieldType, sev: SeverityInfo},
		{name: "another client's namespace, strict: a note", skillMD: "---\nname: s\ndescription: Does d. Use for d.\nmetadata:\n  openclaw:\n    requires: {bins: [jq]}\n---\nx\n", strict: true, code: CodeFieldType, sev: SeverityInfo},
		{name: "metadata.harness, lenient: nothing", skillMD: "---\nname: s\ndescription: Does d. Use for d.\nmetadata:\n  harness:\n    permissions: {filesystem: {read: [docs]}}\n---\nx\n", absent: CodeFieldType},
		{name: "byte-order mark", skillMD: "\xef\xbb\xbf---\nname: s\ndescription: Does d. Use for d.\n---\nx\n", strict: true, code: CodeByteOrderMark, sev: SeverityWarning},
		{name: "{baseDir} link", skillMD: "---\nname: s\ndescription: Does d. Use for d.\n---\nRun [it]({baseDir}/scripts/run.sh).\n", files: map[string]string{"scripts/run.sh": "#!/bin/sh\n"}, strict: true, absent: CodeBrokenReference},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "s")
			os.MkdirAll(dir, 0o755)
			os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(c.skillMD), 0o644)
			for p, body := range c.files {
				os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755)
				os.WriteFile(filepath.Join(dir, p), []byte(body), 0o755)
			}
			v, err := Validate(context.Background(), dir, ValidateOptions{Strict: c.strict})
			if err != nil {
				t.Fatal(err)
			}
			ds := append([]Diagnostic{}, v.Diagnostics...)
			for _, s := range v.Skills {
				ds = append(ds, s.Diagnostics...)
			}
			if c.code != "" {
				d, ok := findDiag(ds, c.code)
				if !ok || d.Severity != c.sev {
					t.Errorf("want %s (%s), got %+v", c.code, c.sev, ds)
				}
			}
			if c.absent != "" {
				if d, ok := findDiag(ds, c.absent); ok {
					t.Errorf("unexpected %s: %+v", c.absent, d)
				}
			}
		})
	}
}
