package skills

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/harness-dev/harness/yamlsafe"
)

// aliasBomb is frontmatter whose aliases expand to width^levels nodes.
func aliasBomb(levels, width int) string {
	var b strings.Builder
	b.WriteString("name: bomb\ndescription: d\nmetadata:\n  l0: &l0 [lol]\n")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "  l%d: &l%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d,", i-1), width), ","))
	}
	return b.String()
}

// TestFrontmatterAliasBomb: frontmatter whose aliases expand past the
// bound is refused at the line that crosses it, having allocated little.
func TestFrontmatterAliasBomb(t *testing.T) {
	fm := []byte(aliasBomb(6, 9))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := parseFrontmatter(fm, 2)
	runtime.ReadMemStats(&after)
	var fe *frontmatterError
	if !errors.As(err, &fe) || fe.Code != CodeFrontmatterInvalid || !strings.Contains(fe.Msg, "expands to more than") {
		t.Fatalf("parseFrontmatter = %v, want a refusal of its expansion", err)
	}
	if fe.Line != 2+10-1 {
		t.Errorf("refused at line %d, want 11 (the line of l6 in SKILL.md)", fe.Line)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 8<<20 {
		t.Errorf("refusing %d bytes of frontmatter allocated %d bytes", len(fm), got)
	}
}

// FuzzFrontmatterBounded: frontmatter is decoded only when its aliases
// expand within yamlsafe's bounds.
func FuzzFrontmatterBounded(f *testing.F) {
	for _, s := range []string{aliasBomb(3, 3), aliasBomb(7, 9), "a: &a [*a]\n", "a: &a {x: 1}\nb: {<<: *a}\n", "- - - [x]\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if _, err := parseFrontmatter(in, 2); err == nil && yamlsafe.Check("fm", in, yamlsafe.Default) != nil {
			t.Fatalf("decoded frontmatter yamlsafe refuses: %q", in)
		}
	})
}
