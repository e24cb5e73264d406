package main

import (
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/harness-dev/harness/internal/testenv"
)

// cmdGitServe serves the bare repositories under a directory of the
// script's work tree over git's smart HTTP protocol (git http-backend, a
// real git server) and sets $GIT_URL to its base:
//
//	gitserve repos
//	exec harness skills add $GIT_URL/skills.git --to ws/skills
func cmdGitServe(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: gitserve DIR")
	}
	url, stop := testenv.StartGitServer(ts.MkAbs(args[0]))
	ts.Defer(stop)
	ts.Setenv("GIT_URL", url)
}
