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
// the harness packages it may import (nil: everything), and package ->
// those its tests may import besides (a cell's "(tests also: ...)").
func rules(t *testing.T) (map[string][]string, map[string][]string) {
	t.Helper()
	doc, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| `([a-z/-]+)` \\|.*\\| ([^|]+) \\|$")
	name := regexp.MustCompile("`([a-z/-]+)`")
	out, tests := map[string][]string{}, map[string][]string{}
	for _, line := range strings.Split(string(doc), "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		cell, forTests, _ := strings.Cut(m[2], "(tests also:")
		for _, n := range name.FindAllStringSubmatch(forTests, -1) {
			tests[m[1]] = append(tests[m[1]], n[1])
		}
		switch cell = strings.TrimSpace(cell); cell {
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
	return out, tests
}

// TestImportsFollowTheArchitecture fails on an arrow the architecture does
// not draw (an import upwards, or a new dependency nobody wrote down),
// and on a package the table does not list. A package's tests are held to
// its row too (and to what the row adds for tests alone): a test that
// reaches upwards ties the package to what lies above it as surely as its
// code would. internal/testenv, which exists for tests, and the test
// helpers outside the table (the scripted model server loop/looptest) may
// be imported by any test.
func TestImportsFollowTheArchitecture(t *testing.T) {
	allowed, forTests := rules(t)
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports,TestImports,XTestImports", "../../...")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p struct {
			ImportPath   string
			Imports      []string
			TestImports  []string
			XTestImports []string
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
		check := func(imports []string, who string, may []string) {
			for _, imp := range imports {
				dep, ok := strings.CutPrefix(imp, module)
				if !ok || dep == pkg {
					continue
				}
				if !slices.Contains(may, dep) {
					t.Errorf("%s imports %s, which docs/architecture.md does not allow it", who, dep)
				}
			}
		}
		check(p.Imports, pkg, may)
		mayTest := append(slices.Clone(may), forTests[pkg]...)
		check(testOnly(p.TestImports), pkg+" (a test)", mayTest)
		check(testOnly(p.XTestImports), pkg+" (a test)", mayTest)
	}
}

// testOnly drops the imports every test may have.
func testOnly(imports []string) []string {
	var out []string
	for _, imp := range imports {
		dep := strings.TrimPrefix(imp, module)
		if strings.HasSuffix(dep, "/looptest") || dep == "internal/testenv" {
			continue
		}
		out = append(out, imp)
	}
	return out
}
