package discovery_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/harness-dev/harness/discovery"
)

const goodIndex = `{"type":"harness.skill-index","version":1,"skills":[
 {"name":"pdf-forms","description":"Fills in PDF forms. Use for PDF forms.","source":"https://git.example/t/s.git#skills/pdf-forms","ref":"v1"},
 {"name":"changelog","description":"Keeps the changelog. Use for changelogs.","source":"https://git.example/t/s.git#skills/changelog"}]}`

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, data, err string
	}{
		{"good", goodIndex, ""},
		{"a third party's, without type", `{"skills":[{"name":"a","description":"b","source":"c"}]}`, ""},
		{"not JSON", `{"skills":`, "not JSON"},
		{"unknown field", `{"skills":[{"name":"a","description":"b","source":"c","run":"rm -rf /"}]}`, "does not match its schema"},
		{"bad name", `{"skills":[{"name":"Bad Name","description":"b","source":"c"}]}`, "/skills/0/name"},
		{"bad digest", `{"skills":[{"name":"a","description":"b","source":"c","digest":"md5:x"}]}`, "/skills/0/digest"},
		{"no skills", `{}`, "does not match"},
		{"too large", `{"skills":[],"pad":"` + strings.Repeat("x", discovery.MaxIndexBytes) + `"}`, "more than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ix, err := discovery.Parse([]byte(tc.data))
			switch {
			case tc.err == "" && err != nil:
				t.Fatal(err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("Parse = %+v, %v; want an error with %q", ix, err, tc.err)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(goodIndex))
	f.Add([]byte(`{"skills":[{"name":"a","description":"b","source":"c"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ix, err := discovery.Parse(data)
		if err != nil {
			return
		}
		for _, e := range ix.Skills {
			if e.Name == "" || e.Description == "" || e.Source == "" {
				t.Fatalf("an entry without its required fields passed: %+v", e)
			}
		}
	})
}

// TestFetcherKeepsIndexesByETag: a second fetch of an unchanged index is a
// 304 answered from the cache; an unreachable source falls back to the
// cached copy, marked stale.
func TestFetcherKeepsIndexesByETag(t *testing.T) {
	var full, notModified atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"v1"`)
		if r.Header.Get("If-None-Match") == `"v1"` {
			notModified.Add(1)
			w.WriteHeader(http.StatusNotModified)
			return
		}
		full.Add(1)
		fmt.Fprint(w, goodIndex)
	}))
	f := &discovery.Fetcher{CacheDir: t.TempDir()}
	src := discovery.Source{Name: "team", URL: srv.URL + "/index.json"}
	for i, want := range []discovery.Fetched{{}, {Cached: true}} {
		ix, got, err := f.Fetch(context.Background(), src)
		if err != nil || len(ix.Skills) != 2 || got != want {
			t.Fatalf("fetch %d: %+v %v %v, want %+v", i+1, got, err, ix, want)
		}
	}
	if full.Load() != 1 || notModified.Load() != 1 {
		t.Errorf("%d full answers and %d 304s, want 1 and 1", full.Load(), notModified.Load())
	}
	srv.Close()
	ix, got, err := f.Fetch(context.Background(), src)
	if err != nil || len(ix.Skills) != 2 || !got.Stale {
		t.Errorf("unreachable: %+v %v", got, err)
	}
	if _, _, err := (&discovery.Fetcher{}).Fetch(context.Background(), src); err == nil || !strings.Contains(err.Error(), "cannot be reached") {
		t.Errorf("unreachable without a cache: %v", err)
	}
}

// TestRankPutsTheFittingEntryFirst: an index entry that fits the need
// comes before an unrelated local skill.
func TestRankPutsTheFittingEntryFirst(t *testing.T) {
	ix, err := discovery.Parse([]byte(goodIndex))
	if err != nil {
		t.Fatal(err)
	}
	cands := append([]discovery.Candidate{{Entry: discovery.Entry{Name: "deploy", Description: "Deploys the service. Use to deploy."}, From: discovery.FromLocal, Installed: "yes"}},
		discovery.FromIndex("team", ix, nil)...)
	got := discovery.Rank("fill in a pdf form", cands, 3)
	if len(got) == 0 || got[0].Name != "pdf-forms" || got[0].From != "team" || got[0].Installed != "" {
		t.Fatalf("ranking = %+v", got)
	}
}

func TestSearchMCPReadsBothShapes(t *testing.T) {
	for name, body := range map[string]string{
		"wrapped": `{"servers":[{"server":{"name":"io.github.a/pdf","description":"PDF tools","version":"1.2.0","packages":[{"registryType":"npm","identifier":"@a/pdf","version":"1.2.0"},{"registryType":"pypi","identifier":"a-pdf","version":"1.2.0"},{"registryType":"oci","identifier":"ghcr.io/a/pdf","version":"1.2.0"}],"remotes":[{"type":"streamable-http","url":"https://a.example/mcp"}]},"_meta":{}}]}`,
		"plain":   `{"servers":[{"name":"io.github.a/pdf","description":"PDF tools","version":"1.2.0","packages":[{"registry_name":"npm","name":"@a/pdf","version":"1.2.0"},{"registry_type":"pypi","name":"a-pdf","version":"1.2.0"},{"registry_type":"oci","name":"ghcr.io/a/pdf","version":"1.2.0"}],"remotes":[{"transport_type":"streamable-http","url":"https://a.example/mcp"}]}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			var query string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				query = r.URL.Path + "?" + r.URL.RawQuery
				fmt.Fprint(w, body)
			}))
			defer srv.Close()
			got, err := discovery.SearchMCP(context.Background(), nil, srv.URL+"/", "pdf forms", 5)
			if err != nil || len(got) != 1 {
				t.Fatalf("%+v %v", got, err)
			}
			want := "npx -y @a/pdf@1.2.0|uvx a-pdf==1.2.0|docker run -i --rm ghcr.io/a/pdf:1.2.0|remote streamable-http: https://a.example/mcp"
			if strings.Join(got[0].Install, "|") != want || got[0].Name != "io.github.a/pdf" {
				t.Errorf("server = %+v", got[0])
			}
			if query != "/v0/servers?limit=5&search=pdf+forms" {
				t.Errorf("asked %s", query)
			}
		})
	}
}

// TestFetcherRefusesASharedCache: an index cache other users can write
// is refused, as the snapshot cache is: whoever writes it can plant an
// index, with the ETag the server answers 304 to, whose sources the run
// then installs from.
func TestFetcherRefusesASharedCache(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"v1"`)
		if r.Header.Get("If-None-Match") == `"v1"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		fmt.Fprint(w, goodIndex)
	}))
	defer srv.Close()
	shared := t.TempDir()
	src := discovery.Source{Name: "team", URL: srv.URL + "/index.json"}
	if _, _, err := (&discovery.Fetcher{CacheDir: shared}).Fetch(context.Background(), src); err != nil {
		t.Fatal(err)
	}
	planted := strings.ReplaceAll(goodIndex, "https://git.example/t/s.git", "https://evil.example/x.git")
	files, _ := filepath.Glob(filepath.Join(shared, "*.json"))
	if len(files) != 1 {
		t.Fatalf("cache holds %v", files)
	}
	if err := os.WriteFile(files[0], []byte(planted), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	ix, _, err := (&discovery.Fetcher{CacheDir: shared}).Fetch(context.Background(), src)
	if err == nil || !strings.Contains(err.Error(), "writable by other users") {
		t.Fatalf("a shared cache was used: %v %+v", err, ix)
	}
}
