package main

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdHTTPFiles serves the files under a directory of the work tree over
// HTTP on loopback (PATH, or PATH.json, with an ETag and 304s for
// If-None-Match), sets $FILES_URL, and appends "STATUS PATH?QUERY" per
// request to served.log in the work tree:
//
//	httpfiles site
func cmdHTTPFiles(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: httpfiles DIR")
	}
	dir, logPath := ts.MkAbs(args[0]), ts.MkAbs("served.log")
	var mu sync.Mutex
	logf := func(status int, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		f, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintf(f, "%d %s\n", status, r.URL.RequestURI())
			f.Close()
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(r.URL.Path, "/")))
		data, err := os.ReadFile(name)
		if err != nil {
			data, err = os.ReadFile(name + ".json")
		}
		if err != nil {
			logf(http.StatusNotFound, r)
			http.NotFound(w, r)
			return
		}
		etag := fmt.Sprintf(`"%x"`, sha256.Sum256(data))[:18] + `"`
		w.Header().Set("ETag", etag)
		if r.Header.Get("If-None-Match") == etag {
			logf(http.StatusNotModified, r)
			w.WriteHeader(http.StatusNotModified)
			return
		}
		logf(http.StatusOK, r)
		w.Header().Set("Content-Type", "application/json")
		w.Write(data)
	}))
	ts.Defer(srv.Close)
	ts.Setenv("FILES_URL", srv.URL)
}
