package testenv

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// AsUser runs the named tests of this test binary again as uid (its gid
// the same, no supplementary groups), and fails t unless each of them
// passed with nothing skipped. What harness does when it is not root (no
// idmapped mount, no drop to another user, a sweep with no more rights
// than the script it checks) is then tested on machines whose tests run
// as root, as CI's do. Run by another user already, the tests ran as one:
// t is skipped.
func AsUser(t testing.TB, uid int, tests ...string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("already an ordinary user: %s ran as one", strings.Join(tests, ", "))
	}
	_, err := exec.LookPath("setpriv")
	Need(t, "setpriv (util-linux)", err)
	// The test binary lives in a directory only root can enter: give the
	// other user a copy it can execute.
	dir, err := os.MkdirTemp("", "harness-as-user-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, filepath.Base(self))
	if err := copyExecutable(self, bin); err != nil {
		t.Fatal(err)
	}
	id := strconv.Itoa(uid)
	cmd := exec.Command("setpriv", "--reuid="+id, "--regid="+id, "--clear-groups", "--",
		bin, "-test.run", "^("+strings.Join(tests, "|")+")$", "-test.count", "1", "-test.v")
	cmd.Env = append(os.Environ(), "HOME=/tmp", "TMPDIR=/tmp")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	for _, name := range tests {
		if err != nil || !strings.Contains(string(out), "--- PASS: "+name+" ") {
			t.Fatalf("%s as uid %d: %v\n%s", name, uid, err, out)
		}
	}
	if strings.Contains(string(out), "--- SKIP") {
		t.Errorf("parts were skipped as uid %d:\n%s", uid, out)
	}
}

func copyExecutable(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
