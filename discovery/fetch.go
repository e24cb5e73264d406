package discovery

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/harness-dev/harness/artifacts"
)

// Source is a configured index: skills.sources in the config file.
type Source struct {
	Name string `yaml:"name" json:"name"`
	URL  string `yaml:"url" json:"url"`
}

// Fetcher fetches indexes over HTTP (or reads file paths), with a
// timeout, keeping each by URL in CacheDir with its ETag so that an
// unchanged index costs a 304.
type Fetcher struct {
	CacheDir string
	Client   *http.Client
	Timeout  time.Duration
}

// Fetched says where an index came from.
type Fetched struct {
	// Cached: the server said it had not changed (304), or could not be
	// reached and a cached copy was used (Stale).
	Cached, Stale bool
}

// Fetch returns src's index.
func (f *Fetcher) Fetch(ctx context.Context, src Source) (*Index, Fetched, error) {
	if !isHTTP(src.URL) {
		data, err := readBounded(src.URL)
		if err != nil {
			return nil, Fetched{}, fmt.Errorf("source %s: %v", src.Name, err)
		}
		ix, err := Parse(data)
		if err != nil {
			return nil, Fetched{}, fmt.Errorf("source %s (%s): %v", src.Name, src.URL, err)
		}
		return ix, Fetched{}, nil
	}
	timeout := f.Timeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := privateDir(f.CacheDir); err != nil {
		return nil, Fetched{}, fmt.Errorf("source %s: %v", src.Name, err)
	}
	body, etag := f.cached(src.URL)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src.URL, nil)
	if err != nil {
		return nil, Fetched{}, fmt.Errorf("source %s: %v", src.Name, err)
	}
	if etag != "" && body != nil {
		req.Header.Set("If-None-Match", etag)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := withoutRedirects(f.Client).Do(req)
	if err != nil {
		if body != nil {
			ix, perr := Parse(body)
			if perr == nil {
				return ix, Fetched{Cached: true, Stale: true}, nil
			}
		}
		return nil, Fetched{}, fmt.Errorf("source %s (%s) cannot be reached: %v", src.Name, src.URL, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotModified && body != nil:
		ix, err := Parse(body)
		if err != nil {
			return nil, Fetched{}, fmt.Errorf("source %s: the cached copy: %v", src.Name, err)
		}
		return ix, Fetched{Cached: true}, nil
	case resp.StatusCode != http.StatusOK:
		return nil, Fetched{}, fmt.Errorf("source %s (%s) answered HTTP %d%s", src.Name, src.URL, resp.StatusCode, redirectAdvice(resp, "the index"))
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxIndexBytes+1))
	if err != nil {
		return nil, Fetched{}, fmt.Errorf("source %s: %v", src.Name, err)
	}
	ix, err := Parse(data)
	if err != nil {
		return nil, Fetched{}, fmt.Errorf("source %s (%s): %v", src.Name, src.URL, err)
	}
	f.keep(src.URL, data, resp.Header.Get("ETag"))
	return ix, Fetched{}, nil
}

// withoutRedirects is c (or a default client) made to follow no
// redirect: the operator named the index's or registry's URL, not the
// addresses its server points elsewhere (a loopback service, a cloud
// metadata endpoint), whose answer would then reach an error the model
// is given.
func withoutRedirects(c *http.Client) *http.Client {
	out := &http.Client{}
	if c != nil {
		*out = *c
	}
	out.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return out
}

// redirectAdvice says what to do about a redirect harness did not follow
// ("" for another status). The target is not quoted: it is the server's
// word.
func redirectAdvice(resp *http.Response, what string) string {
	if resp.StatusCode < 300 || resp.StatusCode > 399 {
		return ""
	}
	return " (a redirect, which harness does not follow: give the URL " + what + " is served at)"
}

func isHTTP(u string) bool {
	return len(u) > 7 && (u[:7] == "http://" || len(u) > 8 && u[:8] == "https://")
}

func readBounded(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, MaxIndexBytes+1))
}

// privateDir refuses an index cache another user could write (or that is
// not this user's), as the snapshot cache is refused: whoever writes it
// can plant an index, kept with the ETag the server answers 304 to, and
// the skills it names are what install_skill installs. A cache not made
// yet is made private when an index is first kept.
func privateDir(dir string) error {
	if dir == "" {
		return nil
	}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return artifacts.PrivateDir(dir, "index cache", "--index-cache")
}

// cacheFile is where url's index is kept: named by the URL's hash.
func (f *Fetcher) cacheFile(url string) string {
	if f.CacheDir == "" {
		return ""
	}
	h := sha256.Sum256([]byte(url))
	return filepath.Join(f.CacheDir, hex.EncodeToString(h[:16]))
}

func (f *Fetcher) cached(url string) (body []byte, etag string) {
	p := f.cacheFile(url)
	if p == "" {
		return nil, ""
	}
	body, err := readBounded(p + ".json")
	if err != nil {
		return nil, ""
	}
	e, _ := os.ReadFile(p + ".etag")
	return body, string(e)
}

// keep stores the index and its ETag; a cache that cannot be written is
// a later miss, not a failure.
func (f *Fetcher) keep(url string, body []byte, etag string) {
	p := f.cacheFile(url)
	if p == "" || etag == "" {
		return
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return
	}
	if artifacts.WriteFile(p+".json", body, 0o600) == nil {
		artifacts.WriteFile(p+".etag", []byte(etag), 0o600)
	}
}
