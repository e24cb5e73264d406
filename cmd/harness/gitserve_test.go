package main

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/harness-dev/harness/internal/testenv"
)

// cmdGitServe serves the bare repositories under a directory of the
// script's work tree over git's smart HTTP protocol (git http-backend, a
// real git server) and sets $GIT_URL to its base:
//
//	gitserve repos
//	exec harness skills add $GIT_URL/skills.git --to ws/skills
//
// With -normalise a front cleans each request's decoded path first, as
// nginx or Go's ServeMux do, so /a/../b.git (or /a/%2e%2e/b.git) is
// served as /b.git.
func cmdGitServe(ts *testscript.TestScript, neg bool, args []string) {
	normalise := len(args) == 2 && args[0] == "-normalise"
	if normalise {
		args = args[1:]
	}
	if neg || len(args) != 1 {
		ts.Fatalf("usage: gitserve [-normalise] DIR")
	}
	base, stop := testenv.StartGitServer(ts.MkAbs(args[0]))
	ts.Defer(stop)
	if normalise {
		to, err := url.Parse(base)
		ts.Check(err)
		proxy := httputil.NewSingleHostReverseProxy(to)
		front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.URL.Path, r.URL.RawPath = path.Clean(r.URL.Path), ""
			proxy.ServeHTTP(w, r)
		}))
		ts.Defer(front.Close)
		base = front.URL
	}
	ts.Setenv("GIT_URL", base)
}
