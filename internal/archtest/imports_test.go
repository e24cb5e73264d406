package archtest

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/harness-dev/harness/"

// rules reads the package table of docs/architecture.md: package ->
// the harness packages it may import (nil: everything).
func rules(t *testing.T) map[string][]string {
	t.Helper()
	doc, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| `([a-z/-]+)` \\|.*\\| ([^|]+) \\|$")
	name := regexp.MustCompile("`([a-z/-]+)`")
	out := map[string][]string{}
	for _, line := range strings.Split(string(doc), "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		switch cell := strings.TrimSpace(m[2]); cell {
		case "everything":
			out[m[1]] = nil
		case "none":
			out[m[1]] = []string{}
		default:
			allowed := []string{}
			for _, n := range name.FindAllStringSubmatch(cell, -1) {
				allowed = append(allowed, n[1])
			}
			out[m[1]] = allowed
		}
	}
	if len(out) == 0 {
		t.Fatal("docs/architecture.md has no package table")
	}
	return out
}

// TestImportsFollowTheArchitecture fails on an arrow the architecture does
// not draw (an import upwards, or a new dependency nobody wrote down),
// and on a package the table does not list.
func TestImportsFollowTheArchitecture(t *testing.T) {
	allowed := rules(t)
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", "../../...")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkg := strings.TrimPrefix(p.ImportPath, module)
		if pkg == p.ImportPath || strings.HasPrefix(pkg, "examples/") || strings.HasPrefix(pkg, "testdata/") || strings.HasSuffix(pkg, "/looptest") || pkg == "internal/archtest" {
			continue
		}
		may, listed := allowed[pkg]
		if !listed {
			t.Errorf("%s is not in docs/architecture.md's package table", pkg)
			continue
		}
		if may == nil {
			continue
		}
		for _, imp := range p.Imports {
			dep, ok := strings.CutPrefix(imp, module)
			if !ok || dep == pkg {
				continue
			}
			if !slices.Contains(may, dep) {
				t.Errorf("%s imports %s, which docs/architecture.md does not allow it", pkg, dep)
			}
		}
	}
}
