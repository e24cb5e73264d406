package scripts

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/testenv"
)

// TestHelperPinsRulePathsBeneathMounts: the Landlock helper makes each
// rule for a path inside a mount on a descriptor it opened beneath the
// mount without following links. A directory swapped for a link to
// another place after harness checked the rules (as another skill's
// server could do) makes the helper refuse; nothing runs, and the place
// the link leads to gets no rule.
func TestHelperPinsRulePathsBeneathMounts(t *testing.T) {
	_, err := Probe(context.Background(), BackendLandlock, helper(t))
	testenv.Need(t, "sandbox backend landlock", err)
	ws, outside := t.TempDir(), t.TempDir()
	testenv.WriteTree(t, outside, map[string]string{"sub/keep": "outside"})
	testenv.WriteTree(t, ws, map[string]string{"real/sub/x": "inside"})
	// What harness checked was real/sub; what the helper finds is a link.
	if err := os.Symlink(outside, filepath.Join(ws, "cfg")); err != nil {
		t.Fatal(err)
	}
	run := func(rw string) (string, error) {
		cmd := exec.Command(helper(t), HelperArg, "--ro", "/usr", "--ro", "/bin", "--ro", "/lib", "--ro", "/lib64", "--beneath", ws, "--rw", rw, "--",
			"/bin/sh", "-c", "echo ran; echo x > "+rw+"/written")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run(filepath.Join(ws, "cfg", "sub"))
	if err == nil || !strings.Contains(out, "not reached beneath") || strings.Contains(out, "ran") {
		t.Fatalf("a rule path behind a link: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(outside, "sub", "written")); err == nil {
		t.Fatal("the helper wrote where the link leads")
	}
	// The path itself, reached without a link, is granted on its
	// descriptor: the script writes there.
	out, err = run(filepath.Join(ws, "real", "sub"))
	if err != nil || !strings.Contains(out, "ran") {
		t.Fatalf("a plain rule path: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(ws, "real", "sub", "written")); err != nil {
		t.Fatalf("the granted directory was not writable: %v", err)
	}
}

func TestWithin(t *testing.T) {
	for _, tc := range []struct {
		path, root, rel string
		ok              bool
	}{
		{"/ws", "/ws", ".", true},
		{"/ws/a/b", "/ws", "a/b", true},
		{"/wsx/a", "", "", false},
		{"/usr/lib", "", "", false},
	} {
		root, rel, ok := within(tc.path, []string{"/ws", "/other"})
		if root != tc.root || rel != tc.rel || ok != tc.ok {
			t.Errorf("within(%s) = %q %q %v", tc.path, root, rel, ok)
		}
	}
}
