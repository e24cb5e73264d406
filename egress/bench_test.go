package egress

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkProxyGet is one plain HTTP GET through the proxy (the client's
// connection to the proxy kept alive; the proxy's upstream connection is
// new each time, as it is for every request it forwards), against
// BenchmarkDirectGet, the same GET on a kept-alive direct connection.
func BenchmarkProxyGet(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer up.Close()
	port := portOf(b, up.URL)
	_, sock, _ := start(b, port)
	c := client(sock, nil)
	u := "http://localhost:" + itoa(port) + "/"
	for b.Loop() {
		get(b, c, u)
	}
}

// BenchmarkProxyConnect is a new CONNECT tunnel per request (what an
// HTTPS client without keep-alive pays), plain HTTP inside it.
func BenchmarkProxyConnect(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer up.Close()
	port := portOf(b, up.URL)
	_, sock, _ := start(b, port)
	for b.Loop() {
		status, _ := raw(b, sock, "CONNECT localhost:"+itoa(port)+" HTTP/1.1\r\n\r\n")
		if status != "200 Connection Established" {
			b.Fatal(status)
		}
	}
}

func BenchmarkDirectGet(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer up.Close()
	for b.Loop() {
		get(b, http.DefaultClient, up.URL)
	}
}

func get(b *testing.B, c *http.Client, u string) {
	resp, err := c.Get(u)
	if err != nil {
		b.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		b.Fatal(resp.Status)
	}
}

func itoa(n int) string { return fmt.Sprint(n) }
