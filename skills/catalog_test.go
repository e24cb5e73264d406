package skills

import (
	"context"
	"path"
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/testenv"
)

func TestBuildCatalog(t *testing.T) {
	base := t.TempDir()
	a, b := base+"/a", base+"/b"
	testenv.WriteTree(t, a, map[string]string{
		"zeta/SKILL.md":   skillMD("zeta", strings.Repeat("z", 300), ""),
		"alpha/SKILL.md":  skillMD("alpha", "short", ""),
		"hidden/SKILL.md": "---\nname: hidden\ndescription: h\ndisable-model-invocation: true\n---\n",
	})
	testenv.WriteTree(t, b, map[string]string{
		"alpha/SKILL.md": skillMD("alpha", "shadowed", ""),
		"beta/SKILL.md":  skillMD("beta", "from b", ""),
	})
	reg, err := Scan(context.Background(), ScanOptions{Roots: []string{a, b}})
	testenv.Must(t, err)

	full := BuildCatalog(reg, 0)
	if got := strings.Join(full.Names(), ","); got != "alpha,zeta,beta" {
		t.Errorf("catalog order = %s (want root order, then name; hidden and shadowed left out)", got)
	}
	if len(full.Steps) != 0 || !strings.Contains(full.Text(), "- alpha: short\n") {
		t.Errorf("untruncated catalog: %+v", full)
	}

	short := BuildCatalog(reg, 120)
	if len(short.Steps) == 0 || short.Steps[0].Action != "shortened" || catalogSize(short.Entries) > 120 {
		t.Errorf("shortened catalog: %+v", short)
	}
	tiny := BuildCatalog(reg, 30)
	last := tiny.Steps[len(tiny.Steps)-1]
	if last.Action != "dropped" || catalogSize(tiny.Entries) > 30 || len(tiny.Diagnostics()) != len(tiny.Steps) {
		t.Errorf("tiny catalog: %+v", tiny)
	}
	if tiny.Steps[len(tiny.Steps)-1].Skills[0] == "alpha" && len(tiny.Entries) > 0 {
		t.Errorf("highest-precedence skill dropped before lower ones: %+v", tiny.Steps)
	}
}

func FuzzCheckResourcePath(f *testing.F) {
	for _, s := range []string{"references/a.md", "../x", "/etc/passwd", "a//b", "a/./b", "", "a\x00b", "..", "a/.."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, rel string) {
		if CheckResourcePath(rel) != nil {
			return
		}
		if path.Clean(rel) != rel || path.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, "../") || strings.ContainsRune(rel, 0) {
			t.Fatalf("accepted %q", rel)
		}
		if j := path.Join("/skill", rel); j != "/skill" && !strings.HasPrefix(j, "/skill/") {
			t.Fatalf("%q leaves the skill: %s", rel, j)
		}
	})
}
