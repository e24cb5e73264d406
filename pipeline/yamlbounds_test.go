package pipeline

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/yamlsafe"
)

// laughs is levels anchors under vars:, each a list of width aliases of
// the one before: width^levels nodes once expanded.
func laughs(levels, width int) string {
	var b strings.Builder
	b.WriteString("vars:\n  l0: &l0 [lol]\n")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "  l%d: &l%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d,", i-1), width), ","))
	}
	return b.String()
}

// TestAliasBombRefused: a pipeline or batch file of a few lines whose
// aliases expand past the bound is refused before it is decoded, naming
// the file and line, having allocated little.
func TestAliasBombRefused(t *testing.T) {
	dir := t.TempDir()
	pipe := filepath.Join(dir, "pipe.yaml")
	batch := filepath.Join(dir, "batch.yaml")
	bomb := laughs(6, 9)
	if err := os.WriteFile(pipe, []byte("phases:\n  - name: a\n    prompt: hi\n"+bomb), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(batch, []byte("tasks:\n  - id: a\n    prompt: hi\n"+bomb), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		load func() error
		file string
	}{
		{"pipeline", func() error { _, err := Load(pipe, nil); return err }, pipe},
		{"batch", func() error { _, _, err := LoadBatch(batch, nil, nil, Shard{}); return err }, batch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			err := tc.load()
			runtime.ReadMemStats(&after)
			oe := outcome.As(err)
			if oe == nil || oe.Code != "pipeline_file_invalid" || !strings.Contains(oe.Msg, tc.file+":11: expands to more than") {
				t.Fatalf("load = %v, want pipeline_file_invalid at %s:11", err, tc.file)
			}
			if got := after.TotalAlloc - before.TotalAlloc; got > 16<<20 {
				t.Errorf("refusing the file allocated %d bytes", got)
			}
		})
	}
}

// FuzzParseBounded: a pipeline file is decoded only when its aliases
// expand within yamlsafe's bounds.
func FuzzParseBounded(f *testing.F) {
	for _, s := range []string{laughs(3, 3), laughs(7, 9), "phases:\n  - &p {name: a, prompt: hi}\n  - *p\n", "vars: &v {a: *v}\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if _, err := parse(in, "f.yaml"); err == nil && yamlsafe.Check("f.yaml", in, yamlsafe.Limits{Bytes: maxFile}) != nil {
			t.Fatalf("decoded a pipeline file yamlsafe refuses: %q", in)
		}
	})
}
