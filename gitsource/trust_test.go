package gitsource_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harness-dev/harness/gitsource"
	"github.com/harness-dev/harness/internal/testenv"
)

func TestTrusted(t *testing.T) {
	prefixes := []string{"http://h.example/trusted/", "https://git.example:8443/team", "ssh://git.example/acme/", "/srv/git"}
	for _, tc := range []struct {
		name, url string
		want      bool
	}{
		{"beneath a prefix", "http://h.example/trusted/repo.git", true},
		{"the prefix itself", "https://git.example:8443/team", true},
		{"host case", "HTTP://H.EXAMPLE/trusted/repo.git", true},
		{"user name left out", "ssh://git@git.example/acme/skills.git", true},
		{"doubled slash refused, not cleaned", "http://h.example//trusted//repo.git", false},
		{"doubled slash inside a prefix", "http://h.example/trusted//repo.git", false},
		{"default port", "http://h.example:80/trusted/repo.git", true},
		{"file URL under a trusted directory", "file:///srv/git/skills.git", true},
		{"encoded letter decoded", "http://h.example/%74rusted/repo.git", true},
		{"dot dot", "http://h.example/trusted/../evil/repo.git", false},
		{"dot dot at the end", "http://h.example/trusted/repo/..", false},
		{"dot", "http://h.example/trusted/./repo.git", false},
		{"encoded dots", "http://h.example/trusted/%2e%2e/evil/repo.git", false},
		{"encoded dots, upper case", "http://h.example/trusted/%2E%2E/evil/repo.git", false},
		{"one dot encoded", "http://h.example/trusted/.%2e/evil/repo.git", false},
		{"encoded slash", "http://h.example/trusted/..%2fevil/repo.git", false},
		{"encoded backslash", "http://h.example/trusted/..%5cevil/repo.git", false},
		{"backslash", `http://h.example/trusted/..\evil/repo.git`, false},
		{"encoded twice", "http://h.example/trusted/%252e%252e/evil/repo.git", false},
		{"query", "http://h.example/trusted/repo.git?x=1", false},
		{"segment prefix only", "http://h.example/trustedevil/repo.git", false},
		{"other scheme", "https://h.example/trusted/repo.git", false},
		{"other port", "https://git.example/team/repo.git", false},
		{"other host", "http://evil.example/trusted/repo.git", false},
		{"user name as host", "http://h.example@evil.example/trusted/repo.git", false},
		{"file URL beside a trusted directory", "file:///srv/gitevil/skills.git", false},
		{"file URL leaving a trusted directory", "file:///srv/git/../evil/skills.git", false},
		{"a directory trusts no http URL", "http://h.example/srv/git/x.git", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := gitsource.Trusted(tc.url, prefixes); got != tc.want {
				t.Errorf("Trusted(%q) = %v, want %v", tc.url, got, tc.want)
			}
		})
	}
	if gitsource.Trusted("http://h.example/evil/repo.git", []string{"http://h.example/trusted/../"}) {
		t.Error("a prefix with a dot segment trusted what it resolves to")
	}
}

// TestParseRefusesDotSegments: a source the server may resolve elsewhere
// is refused when it is read, so no lock ever pins it.
func TestParseRefusesDotSegments(t *testing.T) {
	for _, in := range []string{
		"http://h.example/trusted/../evil/repo#s/a",
		"http://h.example/trusted/%2e%2e/evil/repo#s/a",
		"http://h.example/trusted/%2E./evil/repo",
		"http://h.example/trusted/..%2Fevil/repo",
		"http://h.example/trusted/x%5c..%5cevil/repo",
		`http://h.example/trusted\..\evil/repo`,
		"https://h.example/a/./b.git",
		"file:///srv/git/../evil.git",
		"https://h.example/repo.git?service=x",
		"http://h.example/trusted//evil/repo#s/a",
		"http://h.example//trusted/repo",
	} {
		if src, err := gitsource.Parse(in); err == nil {
			t.Errorf("Parse(%q) = %+v, want it refused", in, src)
		}
	}
}

// TestDotSegmentReachesAnotherRepository is why dot segments are
// refused rather than judged as written: behind a front that normalises
// paths, as most HTTP servers and proxies do, the project's real git
// server serves /trusted/../evil/skills.git (and %2e%2e) as
// /evil/skills.git.
func TestDotSegmentReachesAnotherRepository(t *testing.T) {
	testenv.NeedGit(t)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "evil"), 0o755); err != nil {
		t.Fatal(err)
	}
	makeRepo(t, filepath.Join(dir, "evil"))
	srv := normalising(t, testenv.GitServer(t, dir))
	for _, bad := range []string{srv + "/trusted/../evil/skills.git", srv + "/trusted/%2e%2e/evil/skills.git"} {
		if _, err := gitsource.Fetch(context.Background(), bad, "", t.TempDir(), gitsource.DefaultLimits()); err != nil {
			t.Fatalf("the server did not resolve %s: %v", bad, err)
		}
		if gitsource.Trusted(bad, []string{srv + "/trusted/"}) {
			t.Errorf("%s, served from /evil, was trusted under /trusted/", bad)
		}
		if _, err := gitsource.Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted it", bad)
		}
	}
}

// normalising puts a front before backend that cleans each request's
// decoded path, as nginx or Go's ServeMux do, and returns its URL.
func normalising(t *testing.T, backend string) string {
	to, err := url.Parse(backend)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(to)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.URL.Path, r.URL.RawPath = path.Clean(r.URL.Path), ""
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	return front.URL
}

// FuzzTrusted: whatever a URL says, it is trusted only when the path the
// server is asked for, as a server resolving dot segments and one level
// of percent-encoding reads it, lies under the trusted prefix, and holds
// no empty segment.
func FuzzTrusted(f *testing.F) {
	for _, s := range []string{"/trusted/repo.git", "/trusted/../evil", "/trusted/%2e%2e/evil", "/trustedevil/x", "/trusted/..%2fevil", `/trusted\..\evil`, "/%74rusted/x", "/trusted/%252e%252e/x", "//trusted/x", "/trusted//x", "/trusted/x//"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		u := "http://h.example" + p
		if !gitsource.Trusted(u, []string{"http://h.example/trusted/"}) {
			return
		}
		pu, err := url.Parse(u)
		if err != nil {
			t.Fatalf("Trusted(%q) but it does not parse: %v", u, err)
		}
		if strings.Contains(pu.Path, "//") {
			t.Fatalf("Trusted(%q), whose path has an empty segment a server may merge or route on", u)
		}
		served := path.Clean(strings.ReplaceAll(pu.Path, `\`, "/"))
		if again, err := url.PathUnescape(served); err == nil {
			served = path.Clean(strings.ReplaceAll(again, `\`, "/"))
		}
		if served != "/trusted" && !strings.HasPrefix(served, "/trusted/") {
			t.Fatalf("Trusted(%q), which a server reads as %s", u, served)
		}
		if gitsource.CheckURL(u) != nil {
			t.Fatalf("Trusted(%q) though CheckURL refuses it", u)
		}
	})
}

// TestCheckURLRefusesWhatServersReadAnotherWay: segments some servers
// rewrite before they route (Tomcat and Jetty drop ";params" and then
// resolve "..", Windows servers trim trailing dots and spaces) and URLs
// go-git reads as another endpoint than net/url does.
func TestCheckURLRefusesWhatServersReadAnotherWay(t *testing.T) {
	prefixes := []string{"https://h.example/acme/", "/srv/git"}
	for _, tc := range []struct{ name, url string }{
		{"semicolon parameters on dot dot", "https://h.example/acme/..;/evil/x.git"},
		{"semicolon in a segment", "https://h.example/acme/x;v=1/y.git"},
		{"three dots", "https://h.example/acme/x/..."},
		{"trailing dot", "https://h.example/acme/evil./x.git"},
		{"dot dot space", "https://h.example/acme/x/..%20"},
		{"trailing space", "https://h.example/acme/x%20/y.git"},
		{"file URL with one slash, an ssh host to go-git", "file:/srv/git/skills.git"},
		{"https with one slash, an ssh host to go-git", "https:/h.example/acme/x.git"},
		{"https without a host", "https:///h.example/acme/x.git"},
		{"port with a leading zero", "https://h.example:0443/acme/x.git"},
		{"empty segment", "https://h.example/acme//x.git"},
		{"empty first segment", "https://h.example//acme/x.git"},
		{"empty last segments", "https://h.example/acme/x.git//"},
		{"file URL with an empty segment", "file:///srv//git/skills.git"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := gitsource.CheckURL(tc.url); err == nil {
				t.Errorf("CheckURL(%q) accepted it", tc.url)
			}
			if gitsource.Trusted(tc.url, prefixes) {
				t.Errorf("Trusted(%q)", tc.url)
			}
		})
	}
	for _, ok := range []string{"https://h.example/acme/x.git", "https://H.example:443/acme/x.v2.git", "file:///srv/git/skills.git", "ssh://git@h.example/acme/x.git", "http://[::1]:8080/acme/x.git", "https://h.example/acme/x.git/", "https://h.example/acme/"} {
		if err := gitsource.CheckURL(ok); err != nil {
			t.Errorf("CheckURL(%q) = %v", ok, err)
		}
	}
}

// TestFetchRefusesRedirect: a trusted server that redirects elsewhere
// would have harness install from a repository trust never saw, while
// the lock records the trusted URL; no redirect is followed.
func TestFetchRefusesRedirect(t *testing.T) {
	testenv.NeedGit(t)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "evil"), 0o755); err != nil {
		t.Fatal(err)
	}
	makeRepo(t, filepath.Join(dir, "evil"))
	backend := testenv.GitServer(t, dir)
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, backend+strings.Replace(r.URL.RequestURI(), "/trusted/", "/evil/", 1), http.StatusFound)
	}))
	t.Cleanup(redirect.Close)
	if _, err := gitsource.Fetch(context.Background(), backend+"/evil/skills.git", "", t.TempDir(), gitsource.DefaultLimits()); err != nil {
		t.Fatalf("the repository itself does not fetch: %v", err)
	}
	u := redirect.URL + "/trusted/skills.git"
	if _, err := gitsource.Fetch(context.Background(), u, "", t.TempDir(), gitsource.DefaultLimits()); err == nil || !strings.Contains(err.Error(), "redirect") {
		t.Errorf("Fetch(%s) followed the redirect: %v", u, err)
	}
	if got, err := gitsource.RemoteRef(context.Background(), u, "main"); err == nil {
		t.Errorf("RemoteRef(%s) followed the redirect: %q", u, got)
	}
}
