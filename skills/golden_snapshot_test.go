package skills

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite golden files")

// statField holds inodes and times, which differ between any two trees.
var statField = regexp.MustCompile(`"stat": "[^"]*"`)

func goldenTree(t testing.TB, base string) (a, b string) {
	a, b = filepath.Join(base, "ws", "skills"), filepath.Join(base, "ws", "more")
	files := map[string]map[string]string{
		a: {
			"notes/SKILL.md":            "---\nname: notes\ndescription: Writes notes. Use when summarizing.\nlicense: MIT\nmetadata:\n  owner: docs\n  tags: [a, b]\n---\n# Notes\nFollow [the guide](references/guide.md).\n",
			"notes/references/guide.md": "Be brief.\n",
			"notes/scripts/count.sh":    "#!/usr/bin/env bash\nwc -l \"$1\"\n",
			"notes/assets/logo.bin":     "\x00\x01",
			"review/SKILL.md":           "---\nname: review\ndescription: Reviews code. Use before merging.\n---\nSee [missing](references/none.md).\n",
		},
		b: {"notes/SKILL.md": "---\nname: notes\ndescription: Shadowed notes.\n---\nbody\n"},
	}
	for root, fs := range files {
		for name, content := range fs {
			p := filepath.Join(root, name)
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return a, b
}

func snapshotJSON(t *testing.T, base string) []byte {
	t.Helper()
	a, b := goldenTree(t, base)
	real, _ := filepath.EvalSymlinks(base)
	reg, err := Scan(context.Background(), ScanOptions{
		Roots: []string{a, b}, Workspace: filepath.Join(real, "ws"), SandboxWorkspace: "/workspace",
		Now:         func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) },
		Environment: Environment{Path: "/usr/bin:/bin", OS: "linux", Getenv: func(string) string { return "" }},
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.MarshalIndent(reg, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	out = statField.ReplaceAll(out, []byte(`"stat": "$STAT"`))
	return []byte(strings.ReplaceAll(string(out), real, "$ROOT"))
}

// TestRegistryGolden pins the skill-registry.json format.
func TestRegistryGolden(t *testing.T) {
	got := snapshotJSON(t, t.TempDir())
	path := filepath.Join("testdata", "golden", "skill-registry.json")
	if *update {
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./skills -run TestRegistryGolden -update)", err)
	}
	if string(got) != string(want) {
		t.Errorf("skill-registry.json changed; if intended, run go test ./skills -run TestRegistryGolden -update\n--- got\n%s", got)
	}
}

// TestRegistryDeterministic: the same tree in two places has the same
// digests and, host paths aside, the same snapshot.
func TestRegistryDeterministic(t *testing.T) {
	one, two := snapshotJSON(t, t.TempDir()), snapshotJSON(t, t.TempDir())
	if string(one) != string(two) {
		t.Errorf("snapshots differ:\n%s\n---\n%s", one, two)
	}
	digest := regexp.MustCompile(`"digest": "blake3:[0-9a-f]{64}"`)
	if !digest.Match(one) {
		t.Error("no registry digest")
	}
}

func BenchmarkScan(b *testing.B) {
	root := filepath.Join(b.TempDir(), "skills")
	for i := range 200 {
		dir := filepath.Join(root, fmt.Sprintf("s%03d", i))
		os.MkdirAll(filepath.Join(dir, "references"), 0o755)
		os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: s\ndescription: bench\n---\nbody\n"), 0o644)
		for j := range 10 {
			os.WriteFile(filepath.Join(dir, "references", fmt.Sprintf("r%d.md", j)), []byte(strings.Repeat("x", 4096)), 0o644)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := Scan(context.Background(), ScanOptions{Roots: []string{root}}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestStreamJSONMatchesEncoder: the streamed registry is byte-for-byte
// what encoding/json writes.
func TestStreamJSONMatchesEncoder(t *testing.T) {
	for _, n := range []int{0, 1, 3} {
		base := t.TempDir()
		a, _ := goldenTree(t, base)
		roots := []string{a}
		if n == 0 {
			roots = []string{t.TempDir()}
		}
		reg, err := Scan(context.Background(), ScanOptions{Roots: roots})
		if err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		enc.Encode(reg)
		var got bytes.Buffer
		if err := reg.StreamJSON(&got); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Fatalf("streamed JSON differs:\n%s\n---\n%s", got.String(), want.String())
		}
	}
}
