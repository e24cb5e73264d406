package tools

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// An operator's remote MCP server gets the headers of --mcp-config
// ("Authorization": "Bearer ${TOKEN}") with every request. The server
// (or an open redirect on it) answers 307 to another host: Go's client
// would drop Authorization on a redirect to another host, but the header
// transport puts the operator's headers back on every request it sends,
// so the token goes to a host the operator never named. A redirect must
// not be followed (the model's client and git refuse them), or at least
// never carry the headers to another origin.
func TestMCPHeadersNeverReachARedirectTarget(t *testing.T) {
	var leaked atomic.Value
	var hits atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		leaked.Store(r.Header.Get("Authorization"))
		w.WriteHeader(http.StatusNotFound)
	}))
	defer other.Close()
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Another host name for the same listener: Go's client would
		// drop Authorization on its own.
		http.Redirect(w, r, strings.Replace(other.URL, "127.0.0.1", "localhost", 1)+"/mcp", http.StatusTemporaryRedirect)
	}))
	defer server.Close()

	c := headerClient(map[string]string{"Authorization": "Bearer operator-token-5c1d"})
	resp, err := c.Post(server.URL+"/mcp", "application/json", nil)
	if err == nil {
		resp.Body.Close()
	}
	if hits.Load() > 0 {
		t.Errorf("the client followed the server's redirect to another host (localhost, %s) and sent Authorization %q there", other.Listener.Addr(), leaked.Load())
	}
}
