package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

type attempts struct {
	mu  sync.Mutex
	all []Attempt
}

func (a *attempts) add(x Attempt) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.all = append(a.all, x)
	return nil
}

func (a *attempts) list() []Attempt {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Attempt(nil), a.all...)
}

// start serves a proxy whose policy allows localhost on the given ports.
func start(t testing.TB, ports ...int) (*Proxy, string, *attempts) {
	t.Helper()
	var entries []string
	for _, p := range ports {
		entries = append(entries, fmt.Sprintf("localhost:%d", p))
	}
	rules, err := ParseRules(entries)
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "egress.sock")
	log := &attempts{}
	p, err := Listen(sock, Policy{Declared: rules, Allowed: rules}, log.add)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, sock, log
}

// client is what a sandboxed program does: its proxy is the socket.
func client(sock string, tlsConf *tls.Config) *http.Client {
	proxyURL, _ := url.Parse("http://proxy.invalid")
	return &http.Client{Transport: &http.Transport{
		Proxy: http.ProxyURL(proxyURL),
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		},
		TLSClientConfig: tlsConf,
	}}
}

func portOf(t testing.TB, u string) int {
	t.Helper()
	pu, _ := url.Parse(u)
	var p int
	fmt.Sscan(pu.Port(), &p)
	return p
}

func TestProxyAllowsDeclaredHostsOnly(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "plain %s host=%s xff=%q", r.URL.Path, r.Host, r.Header.Get("X-Forwarded-For"))
	}))
	defer up.Close()
	tlsUp := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "secret over tls") }))
	defer tlsUp.Close()
	port, tlsPort := portOf(t, up.URL), portOf(t, tlsUp.URL)
	_, sock, log := start(t, port, tlsPort)
	c := client(sock, &tls.Config{InsecureSkipVerify: true})

	get := func(u string) (int, string) {
		t.Helper()
		resp, err := c.Get(u)
		if err != nil {
			return -1, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get(fmt.Sprintf("http://localhost:%d/a", port)); code != 200 || !strings.Contains(body, "plain /a") || !strings.Contains(body, `xff=""`) {
		t.Errorf("allowed plain GET: %d %s", code, body)
	}
	if code, body := get(fmt.Sprintf("https://localhost:%d/", tlsPort)); code != 200 || body != "secret over tls" {
		t.Errorf("allowed CONNECT: %d %s", code, body)
	}
	// The same server by address: not what was declared.
	if code, body := get(fmt.Sprintf("http://127.0.0.1:%d/", port)); code != 403 || !strings.Contains(body, "not_declared") {
		t.Errorf("by address: %d %s", code, body)
	}
	if code, _ := get(fmt.Sprintf("https://127.0.0.1:%d/", tlsPort)); code != -1 {
		t.Errorf("CONNECT by address went through: %d", code)
	}
	// Another port of the allowed name.
	if code, _ := get(fmt.Sprintf("http://localhost:%d/", port+1)); code != 403 {
		t.Errorf("other port: %d", code)
	}
	got := log.list()
	want := []struct {
		method, host string
		allowed      bool
	}{{"GET", "localhost", true}, {"CONNECT", "localhost", true}, {"GET", "127.0.0.1", false}, {"CONNECT", "127.0.0.1", false}, {"GET", "localhost", false}}
	if len(got) != len(want) {
		t.Fatalf("attempts = %+v", got)
	}
	for i, w := range want {
		if got[i].Method != w.method || got[i].Host != w.host || got[i].Allowed != w.allowed || got[i].Time.IsZero() {
			t.Errorf("attempt %d = %+v, want %+v", i, got[i], w)
		}
	}
}

// raw sends bytes to the proxy and returns the status line and the rest.
func raw(t testing.TB, sock, req string) (string, string) {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, req)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return "", err.Error()
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK && resp.ContentLength < 0 {
		return resp.Status, "(tunnel)"
	}
	rest, _ := io.ReadAll(resp.Body)
	return resp.Status, string(rest)
}

func TestProxyRefusesHostileRequests(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "reached") }))
	defer up.Close()
	port := portOf(t, up.URL)
	_, sock, log := start(t, port)
	for _, tc := range []struct {
		name, req, status, reason string
	}{
		{"origin form", "GET / HTTP/1.1\r\nHost: localhost:PORT\r\n\r\n", "400", "bad_request"},
		{"host header disagrees with the URL", "GET http://127.0.0.1:PORT/ HTTP/1.1\r\nHost: localhost\r\n\r\n", "403", "not_declared"},
		{"https in absolute form", "GET https://localhost:PORT/ HTTP/1.1\r\nHost: localhost\r\n\r\n", "400", "bad_request"},
		{"user info in the URL", "GET http://user:pw@localhost:PORT/ HTTP/1.1\r\nHost: localhost\r\n\r\n", "400", "bad_request"},
		{"CONNECT without a port", "CONNECT localhost HTTP/1.1\r\nHost: localhost\r\n\r\n", "400", "bad_request"},
		{"CONNECT to a decimal address", "CONNECT 2130706433:PORT HTTP/1.1\r\n\r\n", "403", "not_a_host"},
		{"CONNECT to a short address", "CONNECT 127.1:PORT HTTP/1.1\r\n\r\n", "403", "not_a_host"},
		{"CONNECT with user info", "CONNECT user@localhost:PORT HTTP/1.1\r\n\r\n", "400", "bad_request"},
		{"CONNECT to port 0", "CONNECT localhost:0 HTTP/1.1\r\n\r\n", "400", "bad_request"},
		{"CONNECT to a long port", "CONNECT localhost:0PORT HTTP/1.1\r\n\r\n", "400", "bad_request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := raw(t, sock, strings.ReplaceAll(tc.req, "PORT", fmt.Sprint(port)))
			if !strings.Contains(status, tc.status) || strings.Contains(body, "reached") {
				t.Errorf("%s: %s %s", tc.name, status, body)
			}
			all := log.list()
			if len(all) == 0 || all[len(all)-1].Reason != tc.reason || all[len(all)-1].Allowed {
				t.Errorf("%s: last attempt %+v, want %s", tc.name, all, tc.reason)
			}
		})
	}
}

func TestProxyTunnelKeepsEarlyBytesAndRecordsDialFailure(t *testing.T) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	port := echo.Addr().(*net.TCPAddr).Port
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	deadPort := closed.Addr().(*net.TCPAddr).Port
	closed.Close()
	p, sock, log := start(t, port, deadPort)

	// The client's first bytes arrive with the CONNECT, before the 200.
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "CONNECT localhost:%d HTTP/1.1\r\nHost: localhost\r\n\r\nearly", port)
	br := bufio.NewReader(c)
	status, _ := br.ReadString('\n')
	br.ReadString('\n')
	if !strings.Contains(status, "200") {
		t.Fatalf("status %q", status)
	}
	got := make([]byte, 5)
	if _, err := io.ReadFull(br, got); err != nil || string(got) != "early" {
		t.Fatalf("echo = %q, %v", got, err)
	}
	// Closing the proxy cuts the open tunnel.
	p.Close()
	if _, err := br.ReadByte(); err == nil {
		t.Error("tunnel still open after Close")
	}

	_, sock2, log2 := start(t, deadPort)
	status, _ = raw(t, sock2, fmt.Sprintf("CONNECT localhost:%d HTTP/1.1\r\n\r\n", deadPort))
	if !strings.Contains(status, "502") {
		t.Errorf("dead port: %s", status)
	}
	a := log2.list()
	if len(a) != 2 || !a[0].Allowed || a[0].Error != "" || a[1].Error == "" {
		t.Errorf("dial failure attempt: %+v", a)
	}
	if len(log.list()) != 1 {
		t.Errorf("attempts: %+v", log.list())
	}
}

func TestProxyRefusesWhatItCannotRecord(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "reached") }))
	defer up.Close()
	port := portOf(t, up.URL)
	rules, _ := ParseRules([]string{fmt.Sprintf("localhost:%d", port)})
	sock := filepath.Join(t.TempDir(), "egress.sock")
	p, err := Listen(sock, Policy{Declared: rules, Allowed: rules}, func(Attempt) error { return fmt.Errorf("disk full") })
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, req := range []string{"GET http://localhost:PORT/ HTTP/1.1\r\nHost: localhost\r\n\r\n", "CONNECT localhost:PORT HTTP/1.1\r\n\r\n"} {
		status, body := raw(t, sock, strings.ReplaceAll(req, "PORT", fmt.Sprint(port)))
		if !strings.Contains(status, "502") || !strings.Contains(body, "could not be recorded") {
			t.Errorf("%q: %s %s", req, status, body)
		}
	}
}

// A declared and allowed name whose DNS answer is an address of this
// machine or its link (a record its owner controls, changed after the
// operator allowed the name) does not reach it: only localhost, or the
// address itself, declared and allowed, does.
func TestLocalAddressesOnlyByTheirOwnName(t *testing.T) {
	for _, tc := range []struct {
		host, address string
		ok            bool
	}{
		{"api.example.com", "203.0.113.7:443", true},
		{"api.example.com", "10.1.2.3:443", true},
		{"api.example.com", "127.0.0.1:8080", false},
		{"api.example.com", "127.9.9.9:8080", false},
		{"api.example.com", "[::1]:8080", false},
		{"api.example.com", "[::ffff:127.0.0.1]:8080", false},
		{"api.example.com", "169.254.169.254:80", false},
		{"api.example.com", "[fe80::1]:80", false},
		{"api.example.com", "0.0.0.0:80", false},
		{"localhost", "127.0.0.1:8080", true},
		{"localhost", "[::1]:8080", true},
		{"localhost", "169.254.169.254:80", false},
		{"127.0.0.1", "127.0.0.1:8080", true},
		{"169.254.169.254", "169.254.169.254:80", true},
		{"127.0.0.1", "127.0.0.2:8080", false},
	} {
		err := localRefusal(tc.host, tc.address)
		if (err == nil) != tc.ok {
			t.Errorf("localRefusal(%s, %s) = %v, want allowed %v", tc.host, tc.address, err, tc.ok)
		}
	}
	// The dialer the proxy connects with judges the address it connects
	// to: here a name's answer of 127.0.0.1, given as the address.
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer up.Close()
	addr := strings.TrimPrefix(up.URL, "http://")
	if c, err := dialerFor("api.example.com").DialContext(context.Background(), "tcp", addr); err == nil {
		c.Close()
		t.Fatalf("a name's answer %s was connected to", addr)
	} else if !strings.Contains(err.Error(), "an address of this machine or its link") {
		t.Fatalf("refused for another reason: %v", err)
	}
	c, err := dialerFor("127.0.0.1").DialContext(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatalf("the address by itself: %v", err)
	}
	c.Close()
}
