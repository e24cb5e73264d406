package gitsource

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
)

// location is a repository URL as trust is judged on it: what a server
// is asked for, and nothing a person wrote that a server may read
// another way. The user name is left out: it says who asks, not where.
type location struct {
	scheme, host, port string
	path               string // cleaned, absolute, decoded
}

// defaultPorts are the ports a URL without one reaches, so that
// https://h:443/x and https://h/x are one place.
var defaultPorts = map[string]string{"https": "443", "http": "80", "ssh": "22", "git": "9418"}

// CheckURL refuses a repository URL whose path a server may resolve to
// another repository than the one it names: a dot segment (/a/../b,
// /a/./b), an empty segment (/a//b: servers merge slashes or route on
// them, so it is neither /a/b nor surely not), a separator or dot percent-encoded (%2e, %2f, %5c), a
// backslash, a percent sign left after decoding (encoded twice), a query
// or a fragment, a segment holding ";" (Tomcat and Jetty drop ";params"
// and then resolve "..;" as "..") or ending in a dot or a space (Windows
// servers trim them, so "..." and ".. " become ".."). Such a URL is
// refused, never cleaned: cleaning it would trust what the text says
// while the server serves what it resolves. A URL go-git reads as
// another endpoint than net/url does ("file:/x" is scp-like ssh to the
// host "file" to go-git) is refused too, so that trust and fetch judge
// one place.
func CheckURL(raw string) error {
	_, err := locate(raw)
	return err
}

func locate(raw string) (location, error) {
	if strings.ContainsRune(raw, '\\') {
		return location{}, errors.New("it holds a backslash, which a server may read as a path separator")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return location{}, err
	}
	if u.Opaque != "" || u.Scheme == "" {
		return location{}, errors.New("it is not an absolute URL")
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.RawFragment != "" {
		return location{}, errors.New("a repository URL has no query or fragment")
	}
	l := location{scheme: strings.ToLower(u.Scheme), host: strings.ToLower(u.Hostname()), port: u.Port()}
	if strings.ContainsAny(l.host, "%/") {
		return location{}, fmt.Errorf("the host %q is percent-encoded", u.Host)
	}
	if l.host == "" && l.scheme != "file" {
		return location{}, errors.New("it names no host")
	}
	if l.port == defaultPorts[l.scheme] {
		l.port = ""
	}
	escaped := strings.ToLower(u.EscapedPath())
	for _, enc := range []string{"%2e", "%2f", "%5c", "%00"} {
		if strings.Contains(escaped, enc) {
			return location{}, fmt.Errorf("its path holds an encoded dot or separator (%s); give the repository's path as it is", enc)
		}
	}
	if strings.ContainsAny(u.Path, "%\\\x00") {
		return location{}, errors.New("its path is percent-encoded twice or holds a backslash")
	}
	segs := strings.Split(u.Path, "/")
	for i, seg := range segs {
		// The path's leading slash and one trailing slash (a prefix
		// such as https://h/acme/) are the only empty segments allowed.
		if seg == "" && i > 0 && i < len(segs)-1 {
			return location{}, errors.New("its path holds an empty segment (//); give the repository's own path, with one slash between segments")
		}
		if seg == "." || seg == ".." {
			return location{}, fmt.Errorf("its path holds the dot segment %q; give the repository's own path, without . or ..", seg)
		}
		if strings.Contains(seg, ";") {
			return location{}, fmt.Errorf("its path segment %q holds a semicolon, which some servers cut off before they resolve the path", seg)
		}
		if strings.HasSuffix(seg, ".") || strings.HasSuffix(seg, " ") {
			return location{}, fmt.Errorf("its path segment %q ends in a dot or a space, which some servers trim", seg)
		}
	}
	if err := sameEndpoint(raw, l, u.Path); err != nil {
		return location{}, err
	}
	l.path = path.Clean("/" + u.Path)
	return l, nil
}

// sameEndpoint refuses raw when go-git, which lists its refs (RemoteRef),
// reads another scheme, host, port or path from it than the one trust
// was judged on. What it accepts (scheme://host[:port]/path, nothing a
// server resolves elsewhere) the git binary, which fetches it, reads as
// the same place.
func sameEndpoint(raw string, l location, decoded string) error {
	ep, err := transport.NewEndpoint(raw)
	if err != nil {
		return fmt.Errorf("git does not read it as a repository URL: %v", err)
	}
	port := ""
	if ep.Port != 0 {
		port = strconv.Itoa(ep.Port)
	}
	if port == defaultPorts[l.scheme] {
		port = ""
	}
	host := strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(ep.Host, "["), "]"))
	if strings.ToLower(ep.Protocol) != l.scheme || host != l.host || port != l.port || ep.Path != decoded {
		return fmt.Errorf("git reads it as %s, another place than it names; write it as scheme://host/path", ep.String())
	}
	return nil
}

// under reports whether l lies at or beneath prefix, whole path segments
// only: /trusted is not a prefix of /trustedevil.
func (l location) under(prefix location) bool {
	if l.scheme != prefix.scheme || l.host != prefix.host || l.port != prefix.port {
		return false
	}
	return within(l.path, prefix.path, "/")
}

func within(p, dir, sep string) bool {
	dir = strings.TrimSuffix(dir, sep)
	return p == dir || strings.HasPrefix(p, dir+sep)
}

// Trusted reports whether the repository at u lies under one of
// prefixes: a URL prefix (https://github.com/acme/), matched on scheme,
// host, port and whole path segments, or a directory, which trusts the
// file:// URLs beneath it. A URL CheckURL refuses is never trusted, and a
// prefix it refuses trusts nothing.
func Trusted(u string, prefixes []string) bool {
	l, err := locate(u)
	if err != nil {
		return false
	}
	for _, p := range prefixes {
		if strings.Contains(p, "://") {
			if pl, err := locate(p); err == nil && l.under(pl) {
				return true
			}
			continue
		}
		if l.scheme != "file" {
			continue
		}
		dir, err := filepath.Abs(p)
		if err == nil && within(l.path, dir, "/") {
			return true
		}
	}
	return false
}
