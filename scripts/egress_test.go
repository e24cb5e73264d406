package scripts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harness-dev/harness/egress"
	"github.com/harness-dev/harness/internal/testenv"
)

// TestNetworkedSandboxReachesOnlyTheProxy runs curl in a bwrap sandbox
// whose one way out is an egress proxy allowing localhost:PORT, and tries
// every other way out.
func TestNetworkedSandboxReachesOnlyTheProxy(t *testing.T) {
	_, err := Probe(context.Background(), BackendBwrap, helper(t))
	testenv.Need(t, "sandbox backend bwrap", err)
	// Both in /usr/bin, which is what the sandbox sees of the host.
	for _, tool := range []string{"curl", "python3"} {
		_, err := os.Stat("/usr/bin/" + tool)
		testenv.Need(t, "/usr/bin/"+tool, err)
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello from the host") }))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	port := u.Port()

	dir, err := MkdirReachable("harness-egress-test-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o711)
	rules, _ := egress.ParseRules([]string{"localhost:" + port})
	var mu sync.Mutex
	var log []egress.Attempt
	proxy, err := egress.Listen(filepath.Join(dir, "egress.sock"), egress.Policy{Declared: rules, Allowed: rules}, func(a egress.Attempt) error {
		mu.Lock()
		log = append(log, a)
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()

	script := strings.ReplaceAll(`
try() { echo "== $1"; shift; "$@" 2>&1; echo "rc=$?"; }
try allowed curl -sS --max-time 10 http://localhost:PORT/
try by-address curl -sS --max-time 10 -o /dev/null -w '%{http_code}' http://127.0.0.1:PORT/
try tls-by-address curl -sS --max-time 10 https://127.0.0.1:PORT/
try bypass curl -sS --max-time 5 --noproxy '*' http://localhost:PORT/
try direct-ip curl -sS --max-time 5 --noproxy '*' http://1.1.1.1/
try dns getent hosts example.com
try unix-socket python3 -c 'import socket; socket.socket(socket.AF_UNIX).connect("/run/harness/egress.sock")'
try netlink python3 -c 'import socket; socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)'
try inet python3 -c 'import socket; socket.socket(socket.AF_INET6); print("inet ok")' 
`, "PORT", port)
	skill, _ := filepath.EvalSymlinks(t.TempDir())
	os.WriteFile(filepath.Join(skill, "net.sh"), []byte(script), 0o444)
	os.Chmod(skill, 0o755)
	os.Chmod(filepath.Dir(skill), 0o755)
	res, err := Run(context.Background(), BackendBwrap, Spec{
		Argv:    []string{"bash", "/skill/net.sh"},
		Env:     []string{"PATH=/usr/bin:/bin", "HOME=/tmp", "LANG=C.UTF-8"},
		Path:    os.Getenv("PATH"),
		Cwd:     "/tmp",
		Mounts:  []Mount{{Host: skill, Sandbox: "/skill"}},
		Helper:  helper(t),
		Timeout: time.Minute,
		Egress:  filepath.Join(dir, "egress.sock"),
	})
	if err != nil {
		t.Fatal(err)
	}
	out := string(res.Stdout) + string(res.Stderr)
	t.Log(out)
	section := func(name string) string {
		s := out[strings.Index(out, "== "+name+"\n"):]
		if i := strings.Index(s[3:], "\n== "); i >= 0 {
			s = s[:i+3]
		}
		return s
	}
	for name, want := range map[string]string{
		"allowed":        "hello from the hostrc=0",
		"by-address":     "403rc=0",
		"tls-by-address": "rc=56",                       // the proxy's 403 to the CONNECT
		"bypass":         "rc=7",                        // nothing listens on the namespace's loopback
		"direct-ip":      "rc=7",                        // no route out
		"dns":            "rc=2",                        // no resolver
		"unix-socket":    "PermissionError: [Errno 13]", // the script may not make Unix sockets
		"netlink":        "PermissionError: [Errno 13]",
		"inet":           "inet ok\nrc=0",
	} {
		if !strings.Contains(section(name), want) {
			t.Errorf("%s: want %q in\n%s", name, want, section(name))
		}
	}
	mu.Lock()
	defer mu.Unlock()
	var got []string
	for _, a := range log {
		got = append(got, fmt.Sprintf("%s %s:%d %v %s", a.Method, a.Host, a.Port, a.Allowed, a.Reason))
	}
	want := []string{
		"GET localhost:" + port + " true allowed",
		"GET 127.0.0.1:" + port + " false not_declared",
		"CONNECT 127.0.0.1:" + port + " false not_declared",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("attempts:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestNetworkNeedsBwrap(t *testing.T) {
	for _, b := range []Backend{BackendLandlock, BackendNone} {
		_, err := Run(context.Background(), b, Spec{Argv: []string{"bash", "-c", "true"}, Path: os.Getenv("PATH"), Cwd: "/tmp", Helper: helper(t), Egress: "/nonexistent/egress.sock"})
		var ref *Refusal
		if !errors.As(err, &ref) || ref.Code != "network_needs_bwrap" {
			t.Errorf("%s: err = %v, want network_needs_bwrap", b, err)
		}
	}
}
