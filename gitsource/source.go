// Package gitsource reads skills from git repositories: where a source
// says to look (a URL, a path in the repository, a ref), the commit a ref
// names now, and the files of a commit's tree. It fetches that one commit
// with the git binary under rlimits (gitcli.go says why not go-git) and
// reads it with go-git; what is written out, and how safely, is the
// caller's.
package gitsource

import (
	"fmt"
	"net/url"
	"path"
	"strings"
)

// Source is where skills come from: a repository URL, optionally a path
// inside it and a ref (tag, branch or commit; "" is the default branch).
type Source struct {
	URL  string
	Path string
	Ref  string
}

// String is the source as a person writes it: URL[#PATH][@REF].
func (s Source) String() string {
	out := s.URL
	if s.Path != "" {
		out += "#" + s.Path
	}
	if s.Ref != "" {
		out += "@" + s.Ref
	}
	return out
}

// Parse reads URL[#PATH][@REF] (also URL[@REF][#PATH]). The URL is
// https://, http://, ssh://, file://, or owner/repo for GitHub. The path
// must stay inside the repository.
func Parse(raw string) (Source, error) {
	if strings.ContainsAny(raw, "\x00\n\r") || strings.TrimSpace(raw) != raw || raw == "" {
		return Source{}, fmt.Errorf("source %q: give URL[#PATH][@REF]", raw)
	}
	base, frag, _ := strings.Cut(raw, "#")
	var s Source
	if p, ref, ok := strings.Cut(frag, "@"); ok {
		s.Path, s.Ref = p, ref
	} else {
		s.Path = frag
	}
	// An @ after the last slash is a ref; one before it is a user
	// (ssh://git@host/repo).
	if at := strings.LastIndex(base, "@"); at > strings.LastIndex(base, "/") {
		if s.Ref != "" {
			return Source{}, fmt.Errorf("source %q names two refs", raw)
		}
		base, s.Ref = base[:at], base[at+1:]
	}
	if strings.Contains(frag, "@") && s.Ref == "" {
		return Source{}, fmt.Errorf("source %q: empty ref after @", raw)
	}
	u, err := repoURL(base)
	if err != nil {
		return Source{}, fmt.Errorf("source %q: %v", raw, err)
	}
	if err := CheckURL(u); err != nil {
		return Source{}, fmt.Errorf("source %q is refused: %v", raw, err)
	}
	s.URL = u
	if s.Path != "" {
		clean := path.Clean(s.Path)
		if path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
			return Source{}, fmt.Errorf("source %q: the path %q leaves the repository", raw, s.Path)
		}
		if clean == "." {
			clean = ""
		}
		s.Path = clean
	}
	if strings.HasPrefix(s.Ref, "-") || strings.ContainsAny(s.Ref, " ~^:?*[\\") {
		return Source{}, fmt.Errorf("source %q: %q is not a ref", raw, s.Ref)
	}
	return s, nil
}

// repoURL is base as a URL go-git fetches: owner/repo is GitHub's.
func repoURL(base string) (string, error) {
	if !strings.Contains(base, "://") {
		parts := strings.Split(base, "/")
		if len(parts) != 2 || !ownerOrRepo(parts[0]) || !ownerOrRepo(strings.TrimSuffix(parts[1], ".git")) {
			return "", fmt.Errorf("%q is neither a URL (https://, ssh://, file://) nor owner/repo", base)
		}
		return "https://github.com/" + parts[0] + "/" + strings.TrimSuffix(parts[1], ".git") + ".git", nil
	}
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	switch u.Scheme {
	case "https", "http", "ssh", "git":
		if u.Host == "" {
			return "", fmt.Errorf("%q has no host", base)
		}
	case "file":
		if u.Path == "" || !path.IsAbs(u.Path) || u.Host != "" && u.Host != "localhost" {
			return "", fmt.Errorf("%q: a file:// URL needs an absolute path", base)
		}
	default:
		return "", fmt.Errorf("scheme %q is not one of https, http, ssh, git, file", u.Scheme)
	}
	return base, nil
}

func ownerOrRepo(s string) bool {
	if s == "" || s == "." || s == ".." {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}
