// Package egress is the only way out of a networked skill's sandbox: an
// HTTP and HTTPS (CONNECT) proxy on a Unix socket that lets a connection
// through when the skill declared its host and the operator allowed it,
// and reports every attempt, allowed or not.
//
// Hosts are matched by the name the client asked for, never by what it
// resolves to: a skill that declared example.com cannot reach the same
// machine by its IP address, and nothing inside the sandbox resolves
// names (the proxy does, on the host).
package egress

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Rule is one allowlist entry: a host name or IP address, and a port
// (0: any port).
type Rule struct {
	Host string
	Port int
}

func (r Rule) String() string {
	if r.Port == 0 {
		return r.Host
	}
	return net.JoinHostPort(r.Host, strconv.Itoa(r.Port))
}

var hexLabel = regexp.MustCompile(`^0x[0-9a-f]*$`)

// Compiled on first use: a bounded repetition compiles to one
// instruction per repeat, which every start would otherwise pay for.
var hostName = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$`)
})

// ParseRule reads host or host:port ([v6]:port for IPv6 with a port).
// No schemes, paths or wildcards: an allowlist names hosts exactly.
func ParseRule(s string) (Rule, error) {
	if s == "" {
		return Rule{}, errors.New("empty network entry")
	}
	if strings.ContainsAny(s, "/@?#*") {
		return Rule{}, fmt.Errorf("%q is not host[:port] (no scheme, path, user or wildcard)", s)
	}
	host, port := s, ""
	if h, p, err := net.SplitHostPort(s); err == nil {
		host, port = h, p
	} else if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		host = s[1 : len(s)-1]
	}
	r := Rule{}
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return Rule{}, fmt.Errorf("%q: port must be 1-65535", s)
		}
		r.Port = n
	}
	h, ok := normalHost(host)
	if !ok {
		return Rule{}, fmt.Errorf("%q is not host[:port]", s)
	}
	r.Host = h
	return r, nil
}

// ParseRules reads a list of entries; the first bad one is the error.
func ParseRules(entries []string) ([]Rule, error) {
	out := make([]Rule, 0, len(entries))
	for _, e := range entries {
		r, err := ParseRule(e)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// normalHost lowercases a name and drops one trailing dot, and writes an
// IP address in its canonical form, so that "LOCALHOST." and "localhost",
// or "::0001" and "::1", are the same host. IPv6 zones are refused.
func normalHost(h string) (string, bool) {
	if a, err := netip.ParseAddr(h); err == nil {
		if a.Zone() != "" {
			return "", false
		}
		return a.Unmap().String(), true
	}
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	if len(h) > 253 || !hostName().MatchString(h) {
		return "", false
	}
	// A name whose last label is a number is an address in a form netip
	// does not read but a C resolver might (127.1, 0x7f.1, 2130706433):
	// never a host name.
	last := h[strings.LastIndexByte(h, '.')+1:]
	if strings.Trim(last, "0123456789") == "" || hexLabel.MatchString(last) {
		return "", false
	}
	return h, true
}

func (r Rule) matches(host string, port int) bool {
	return r.Host == host && (r.Port == 0 || r.Port == port)
}

// Policy decides a destination: it must match an entry the skill declared
// and an entry the operator allowed (the skill never widens the operator).
type Policy struct {
	Declared []Rule
	Allowed  []Rule
}

// Decide says whether host:port may be reached and, when not, why.
func (p Policy) Decide(host string, port int) (bool, string) {
	h, ok := normalHost(host)
	if !ok {
		return false, "not_a_host"
	}
	if port < 1 || port > 65535 {
		return false, "bad_port"
	}
	declared, allowed := false, false
	for _, r := range p.Declared {
		declared = declared || r.matches(h, port)
	}
	for _, r := range p.Allowed {
		allowed = allowed || r.matches(h, port)
	}
	switch {
	case !declared:
		return false, "not_declared"
	case !allowed:
		return false, "not_allowed"
	}
	return true, "allowed"
}
