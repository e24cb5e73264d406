package testenv

import (
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Git runs git in dir with a fixed identity and clock, so commits are the
// same on every machine, and returns its trimmed output.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := GitCmd(dir, args...)
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// GitCmd is Git for callers without a testing.TB (testscript commands).
func GitCmd(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GIT_AUTHOR_NAME=harness test", "GIT_AUTHOR_EMAIL=test@harness.invalid", "GIT_AUTHOR_DATE=2026-01-01T00:00:00Z",
		"GIT_COMMITTER_NAME=harness test", "GIT_COMMITTER_EMAIL=test@harness.invalid", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z",
		"GIT_CONFIG_NOSYSTEM=1", "HOME="+dir, "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// NeedGit stops the test unless the git binary (with git http-backend)
// is installed.
func NeedGit(t testing.TB) {
	t.Helper()
	_, err := exec.LookPath("git")
	if err == nil {
		_, err = os.Stat(filepath.Join(gitExecPath(), "git-http-backend"))
	}
	Need(t, "git (with git http-backend)", err)
}

func gitExecPath() string {
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// GitServer serves the bare repositories under dir over git's smart HTTP
// protocol, with Debian's git http-backend behind net/http/cgi: a real
// git server on loopback. Repository dir/NAME.git is at URL/NAME.git.
func GitServer(t testing.TB, dir string) string {
	t.Helper()
	url, stop := StartGitServer(dir)
	t.Cleanup(stop)
	return url
}

// StartGitServer is GitServer for callers without a testing.TB.
func StartGitServer(dir string) (url string, stop func()) {
	srv := httptest.NewServer(GitHandler(dir))
	return srv.URL, srv.Close
}

// GitHandler is the handler GitServer serves: git http-backend over the
// bare repositories under dir, for a test that wraps it (to count what
// a fetch costs).
func GitHandler(dir string) http.Handler {
	h := &cgi.Handler{
		Path: filepath.Join(gitExecPath(), "git-http-backend"),
		Env:  []string{"GIT_PROJECT_ROOT=" + dir, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) })
}
