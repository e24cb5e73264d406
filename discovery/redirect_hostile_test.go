package discovery_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/harness-dev/harness/discovery"
)

// An index's server is a third party: the operator named its URL, not
// the URLs it redirects to. Following a redirect makes harness, on the
// host, GET whatever address the server names (a loopback service, a
// cloud metadata endpoint) and then quote that answer's keys in the
// schema error it prints and, through discover_skills, hands the model.
// The model's own HTTP client and git's fetch refuse redirects; so must
// the index fetch (and the MCP registry search).
func TestIndexFetchFollowsNoRedirect(t *testing.T) {
	var internalHits atomic.Int64
	internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		internalHits.Add(1)
		fmt.Fprint(w, `{"AccessKeyId-ASIA5EXAMPLE":"x","skills":[]}`)
	}))
	defer internal.Close()
	index := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, internal.URL+"/latest/meta-data/iam/security-credentials/role", http.StatusFound)
	}))
	defer index.Close()

	_, _, err := (&discovery.Fetcher{CacheDir: t.TempDir()}).Fetch(context.Background(), discovery.Source{Name: "team", URL: index.URL + "/index.json"})
	if n := internalHits.Load(); n > 0 {
		t.Errorf("the index fetch followed a redirect to %s (%d requests): harness fetched a URL the operator never named", internal.URL, n)
	}
	if err != nil && strings.Contains(err.Error(), "ASIA5EXAMPLE") {
		t.Errorf("the redirect target's answer reached the error: %v", err)
	}
	if err == nil {
		t.Error("an index answered by a redirect was accepted")
	}

	internalHits.Store(0)
	registry := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, internal.URL+"/", http.StatusFound)
	}))
	defer registry.Close()
	discovery.SearchMCP(context.Background(), nil, registry.URL, "x", 5)
	if n := internalHits.Load(); n > 0 {
		t.Errorf("the MCP registry search followed a redirect to %s (%d requests)", internal.URL, n)
	}
}
