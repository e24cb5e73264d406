package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Attempt is one connection a sandboxed process asked for.
type Attempt struct {
	Time   time.Time
	Method string // CONNECT, or the method of a plain HTTP request
	Host   string // as asked for, normalised when it is a host at all
	Port   int
	// Allowed says the proxy connected (or tried to); Reason is
	// "allowed" or why not: not_declared, not_allowed, not_a_host,
	// bad_port, bad_request.
	Allowed bool
	Reason  string
	// Error is why an allowed connection then failed (dial, upstream):
	// such an attempt is reported twice, when decided and when failed.
	Error string
}

// DialTimeout bounds connecting to an allowed host.
const DialTimeout = 10 * time.Second

// Proxy serves one sandbox on a Unix socket.
type Proxy struct {
	policy Policy
	report func(Attempt) error
	now    func() time.Time
	srv    *http.Server
	ln     net.Listener
	served chan struct{}

	mu      sync.Mutex
	tunnels map[net.Conn]struct{}
	wg      sync.WaitGroup
}

// Listen makes the proxy's socket at path (mode 0666: the sandbox may run
// as another user; the directory is what keeps others out) and serves it
// until Close. report sees every attempt, from the serving goroutines,
// before any byte of it leaves; an attempt it cannot report is refused.
func Listen(path string, policy Policy, report func(Attempt) error) (*Proxy, error) {
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		ln.Close()
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	p := &Proxy{policy: policy, report: report, now: time.Now, ln: ln, served: make(chan struct{}), tunnels: map[net.Conn]struct{}{}}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second, ErrorLog: nil}
	go func() {
		defer close(p.served)
		p.srv.Serve(ln)
	}()
	return p, nil
}

// Close stops serving and cuts every open tunnel.
func (p *Proxy) Close() error {
	err := p.srv.Close()
	<-p.served
	p.mu.Lock()
	for c := range p.tunnels {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a := Attempt{Time: p.now(), Method: r.Method}
	host, port, ok := target(r)
	a.Host, a.Port = host, port
	if h, valid := normalHost(host); valid {
		a.Host = h
	}
	if !ok {
		a.Reason = "bad_request"
		p.report(a)
		http.Error(w, "harness egress proxy: send CONNECT host:port, or an absolute http:// URL (set HTTPS_PROXY and HTTP_PROXY to this proxy)", http.StatusBadRequest)
		return
	}
	a.Allowed, a.Reason = p.policy.Decide(host, port)
	if err := p.report(a); err != nil && a.Allowed {
		http.Error(w, "harness egress proxy: the attempt could not be recorded, so it is refused: "+err.Error(), http.StatusBadGateway)
		return
	}
	if !a.Allowed {
		http.Error(w, fmt.Sprintf("harness egress proxy: %s is not reachable from this sandbox (%s): a host must be in the skill's metadata.harness.permissions.network and in the operator's --allow-network", net.JoinHostPort(host, strconv.Itoa(port)), a.Reason), http.StatusForbidden)
		return
	}
	if r.Method == http.MethodConnect {
		p.tunnel(w, r, a)
		return
	}
	p.forward(w, r, a)
}

// target is where a request wants to go: the authority of a CONNECT, or
// the host of an absolute http URL (port 80 by default). A request in
// origin form ("GET /") names no destination and is refused.
func target(r *http.Request) (string, int, bool) {
	if r.URL.User != nil {
		return r.Host, 0, false
	}
	authority := r.Host
	if r.Method != http.MethodConnect {
		if r.URL.Scheme != "http" || r.URL.Host == "" {
			return r.Host, 0, false
		}
		authority = r.URL.Host
		if r.URL.Port() == "" {
			authority = net.JoinHostPort(r.URL.Hostname(), "80")
		}
	}
	h, ps, err := net.SplitHostPort(authority)
	if err != nil {
		return authority, 0, false
	}
	// Digits only, no sign or leading zero: one way to write a port.
	port, err := strconv.Atoi(ps)
	if err != nil || port < 1 || port > 65535 || strconv.Itoa(port) != ps {
		return h, 0, false
	}
	return h, port, h != ""
}

func (p *Proxy) dial(ctx context.Context, host string, port int) (net.Conn, error) {
	// Decided again where the connection is made: nothing reaches the
	// dialer that the policy did not allow.
	if ok, why := p.policy.Decide(host, port); !ok {
		return nil, fmt.Errorf("%s:%d: %s", host, port, why)
	}
	return dialerFor(host).DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
}

// dialerFor is the dialer that connects to host, judging each address
// the name resolved to as the socket connects (localRefusal).
func dialerFor(host string) *net.Dialer {
	return &net.Dialer{Timeout: DialTimeout, Control: func(_, address string, _ syscall.RawConn) error {
		return localRefusal(host, address)
	}}
}

// localRefusal refuses to connect to address, what host resolved to, when
// it is an address of this machine or its link (loopback, one of its
// interfaces' addresses, link-local such as a cloud's metadata service at
// 169.254.169.254, unspecified)
// and host does not name it: a declared and allowed name whose DNS
// answer is 127.0.0.1 (a record its owner can change at any time) would
// otherwise carry the sandbox to the host's own services. localhost, or
// the address itself, declared and allowed, still reaches it. It runs
// on the address the dialer is about to connect to, after resolution,
// so a name that answers differently each time is judged on the answer
// used.
// ownAddress says whether ip is an address of one of this machine's
// interfaces: a service of the host listening on all addresses answers
// there as on 127.0.0.1. Read at each connection, since interfaces
// change. When they cannot be listed, every address may be one: the
// connection is refused, with the reason in its error.
func ownAddress(ip netip.Addr) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return true
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if own, ok := netip.AddrFromSlice(n.IP); ok && own.Unmap() == ip {
				return true
			}
		}
	}
	return false
}

func localRefusal(host, address string) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%s: not an address: %v", address, err)
	}
	ip := ap.Addr().Unmap()
	if !ip.IsLoopback() && !ip.IsLinkLocalUnicast() && !ip.IsLinkLocalMulticast() && !ip.IsUnspecified() && !ip.IsInterfaceLocalMulticast() && !ownAddress(ip) {
		return nil
	}
	if host == "localhost" && ip.IsLoopback() {
		return nil
	}
	if named, err := netip.ParseAddr(host); err == nil && named.Unmap() == ip {
		return nil
	}
	return fmt.Errorf("%s resolved to %s, an address of this machine or its link, which only localhost or that address itself, declared and allowed, may reach", host, ip)
}

func (p *Proxy) tunnel(w http.ResponseWriter, r *http.Request, a Attempt) {
	up, err := p.dial(r.Context(), a.Host, a.Port)
	if err != nil {
		a.Error = err.Error()
		p.report(a)
		http.Error(w, "harness egress proxy: "+err.Error(), http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		http.Error(w, "harness egress proxy: cannot tunnel on this connection", http.StatusInternalServerError)
		return
	}
	down, rw, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	if _, err := io.WriteString(down, "HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
		up.Close()
		down.Close()
		return
	}
	// A client may send its first bytes (a TLS hello) without waiting for
	// the 200; they sit in the server's reader.
	if n := rw.Reader.Buffered(); n > 0 {
		b, _ := rw.Reader.Peek(n)
		if _, err := up.Write(b); err != nil {
			up.Close()
			down.Close()
			return
		}
	}
	p.mu.Lock()
	p.tunnels[up], p.tunnels[down] = struct{}{}, struct{}{}
	p.wg.Add(1)
	p.mu.Unlock()
	go func() {
		defer p.wg.Done()
		pipe(up, down)
		p.mu.Lock()
		delete(p.tunnels, up)
		delete(p.tunnels, down)
		p.mu.Unlock()
	}()
}

// pipe copies both ways, passing each side's end of stream on as a half
// close, and closes both once both directions are done.
func pipe(a, b net.Conn) {
	var wg sync.WaitGroup
	half := func(dst, src net.Conn) {
		defer wg.Done()
		io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		} else {
			dst.Close()
		}
	}
	wg.Add(2)
	go half(a, b)
	go half(b, a)
	wg.Wait()
	a.Close()
	b.Close()
}

func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, a Attempt) {
	var upErr error
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.Host = "" // the URL's host, which is what was decided
		},
		Transport: &http.Transport{
			Proxy: nil,
			DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
				h, ps, err := net.SplitHostPort(addr)
				if err != nil {
					return nil, err
				}
				port, _ := strconv.Atoi(ps)
				return p.dial(ctx, h, port)
			},
			DisableKeepAlives:     true,
			ResponseHeaderTimeout: 5 * time.Minute,
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			upErr = err
			http.Error(w, "harness egress proxy: "+err.Error(), http.StatusBadGateway)
		},
	}
	rp.ServeHTTP(w, r)
	if upErr != nil && !errors.Is(upErr, context.Canceled) {
		a.Error = upErr.Error()
		p.report(a)
	}
}
