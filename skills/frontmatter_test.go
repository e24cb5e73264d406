package skills

import (
	"errors"
	"strings"
	"testing"
)

// A closing fence with text glued to it is the slip behind most
// frontmatter errors in public skill collections; the message must point
// at that line, not only at where YAML gave up.
func TestGluedFenceIsNamed(t *testing.T) {
	tests := []struct {
		name, in, code, want string
		line                 int
	}{
		{"unclosed", "---\nname: a\ndescription: d\n---# Title\nbody\n", CodeFrontmatterUnclosed, "line 4 starts with '---' followed by text", 4},
		{"invalid YAML after it", "---\nname: a\ndescription: d\n---**Base:** x\n| a | b |\n|---|---|\n---\n", CodeFrontmatterInvalid, "line 4 starts with '---' followed by text", 0},
		{"control character", "---\nname: a\nemoji: \x01f4e7\ndescription: d\n---\n", CodeFrontmatterInvalid, "non-printable character U+0001 at line 3, column 8", 3},
		{"plain unclosed", "---\nname: a\n", CodeFrontmatterUnclosed, "add a line '---' after the YAML", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fm, yamlLine, _, _, err := splitFrontmatter([]byte(tc.in))
			if err == nil {
				_, err = parseFrontmatter(fm, yamlLine)
			}
			var fe *frontmatterError
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v, want a frontmatter error", err)
			}
			if fe.Code != tc.code || !strings.Contains(fe.Msg, tc.want) {
				t.Errorf("got %s %q, want %s containing %q", fe.Code, fe.Msg, tc.code, tc.want)
			}
			if tc.line > 0 && fe.Line != tc.line {
				t.Errorf("line = %d, want %d", fe.Line, tc.line)
			}
		})
	}
}
