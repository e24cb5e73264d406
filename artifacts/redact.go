package artifacts

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"strings"
)

// Redacted replaces a secret wherever harness would have written it.
const Redacted = "[redacted]"

// minSecret keeps a short or empty value from redacting ordinary text.
const minSecret = 8

// bearer is Authorization header text, whoever's token it carries.
var bearer = regexp.MustCompile(`(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{8,}`)

// Redactor removes known secret values (the API key) and Authorization
// header text from everything written through it: the journal, every JSON
// artifact, and the messages a run prints. A provider error that echoes
// the key, a model that repeats it, a base URL that holds it: none of it
// reaches a file or a terminal. A nil Redactor writes unchanged.
type Redactor struct {
	secrets [][]byte
	// escaped match each secret in any JSON-escaped spelling, however
	// deeply nested: a model's tool-call arguments are a JSON document in
	// a JSON string, and "sk-...\u0066" in them is the key once decoded.
	escaped []*regexp.Regexp
}

// NewRedactor redacts the given values (and their JSON-escaped forms).
func NewRedactor(secrets ...string) *Redactor {
	r := &Redactor{}
	for _, s := range secrets {
		if len(s) < minSecret {
			continue
		}
		r.secrets = append(r.secrets, []byte(s))
		if q, _ := json.Marshal(s); !bytes.Equal(q[1:len(q)-1], []byte(s)) {
			r.secrets = append(r.secrets, q[1:len(q)-1])
		}
		r.escaped = append(r.escaped, escapedSpellings(s))
	}
	return r
}

// escapedSpellings matches s with any of its characters written as a JSON
// escape (\u0066 for f, \/ for /) behind any number of backslashes, as
// each level of JSON-in-a-JSON-string doubles them. Redacting the text as
// written, rather than decoding and re-encoding it, leaves every other
// byte as it was: a cassette's request keys and a resumed run's digests
// are of the same bytes whether or not the key was in them.
func escapedSpellings(s string) *regexp.Regexp {
	var b strings.Builder
	for _, c := range s {
		b.WriteString("(?:")
		b.WriteString(regexp.QuoteMeta(string(c)))
		if c < 0x10000 {
			fmt.Fprintf(&b, `|\\+[uU]%s`, hexAnyCase(fmt.Sprintf("%04x", c)))
		}
		if c == '"' || c == '\\' || c == '/' {
			b.WriteString(`|\\+` + regexp.QuoteMeta(string(c)))
		}
		b.WriteString(")")
	}
	return regexp.MustCompile(b.String())
}

func hexAnyCase(h string) string {
	var b strings.Builder
	for _, c := range h {
		if c >= 'a' && c <= 'f' {
			fmt.Fprintf(&b, "[%c%c]", c, c-'a'+'A')
		} else {
			b.WriteRune(c)
		}
	}
	return b.String()
}

// Bytes returns b with every secret replaced.
func (r *Redactor) Bytes(b []byte) []byte {
	if r == nil {
		return b
	}
	for _, s := range r.secrets {
		if bytes.Contains(b, s) {
			b = bytes.ReplaceAll(b, s, []byte(Redacted))
		}
	}
	// An escaped spelling needs a backslash: most text has none to match.
	if bytes.IndexByte(b, '\\') >= 0 {
		for _, re := range r.escaped {
			b = re.ReplaceAllLiteral(b, []byte(Redacted))
		}
	}
	// The regular expression only runs where the word occurs at all: most
	// of what is written (a registry of thousands of skills) has none.
	if (bytes.Contains(b, []byte("earer")) || bytes.Contains(b, []byte("EARER"))) && bearer.Match(b) {
		b = bearer.ReplaceAll(b, []byte("${1}"+Redacted))
	}
	return b
}

// String returns s with every secret replaced.
func (r *Redactor) String(s string) string {
	if r == nil {
		return s
	}
	return string(r.Bytes([]byte(s)))
}

// WriteJSON is artifacts.WriteJSON with the output redacted.
func (r *Redactor) WriteJSON(path string, v any) error {
	_, err := r.WriteJSONDigest(path, v)
	return err
}

// WriteJSONDigest is WriteJSON that also returns the digest of the bytes
// written, for a journal event to reference the file by. A large artifact
// (a JSONStreamer: the registry of thousands of skills) is streamed to
// disk, redacted line by line (a secret never spans a line of indented
// JSON), never held whole in memory.
func (r *Redactor) WriteJSONDigest(path string, v any) (Digest, error) {
	h := NewHasher()
	if s, ok := v.(JSONStreamer); ok {
		err := WriteStream(path, 0o644, func(w io.Writer) error {
			lw := &lineRedactor{r: r, w: io.MultiWriter(w, h)}
			if err := s.StreamJSON(lw); err != nil {
				return err
			}
			return lw.flush()
		})
		return h.Digest(), err
	}
	data, err := r.EncodeJSON(v)
	if err != nil {
		return "", err
	}
	return DigestBytes(data), WriteFile(path, data, 0o644)
}

// EncodeJSON returns v as WriteJSON writes it: indented, redacted.
func (r *Redactor) EncodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return r.Bytes(buf.Bytes()), nil
}

// lineRedactor passes complete lines through the redactor.
type lineRedactor struct {
	r       *Redactor
	w       io.Writer
	pending []byte
}

func (l *lineRedactor) Write(p []byte) (int, error) {
	l.pending = append(l.pending, p...)
	if i := bytes.LastIndexByte(l.pending, '\n'); i >= 0 {
		if _, err := l.w.Write(l.r.Bytes(l.pending[:i+1])); err != nil {
			return 0, err
		}
		l.pending = append(l.pending[:0], l.pending[i+1:]...)
	}
	return len(p), nil
}

func (l *lineRedactor) flush() error {
	_, err := l.w.Write(l.r.Bytes(l.pending))
	l.pending = nil
	return err
}

// URLSecrets are what a base URL carries that may be a credential: its
// user name and password, and the values of query parameters named like
// one (api-key, key, token, sig, code, secret, password, auth), as
// gateways take keys there. An endpoint that echoes its request's URL
// in an error (Cannot POST /v1/chat/completions?api-key=...) then has
// them redacted with the API key. Values shorter than a redactor's
// minimum are left: redacting "pw" everywhere would mangle every text.
func URLSecrets(raw string) []string {
	u, err := url.Parse(raw)
	if err != nil {
		return nil
	}
	var out []string
	if u.User != nil {
		out = append(out, u.User.Username())
		if p, ok := u.User.Password(); ok {
			out = append(out, p)
		}
	}
	for name, vs := range u.Query() {
		if credentialName.MatchString(name) {
			out = append(out, vs...)
		}
	}
	return out
}

var credentialName = regexp.MustCompile(`(?i)key|token|secret|sig|code|pass|auth|cred`)

// EndpointOf is a base URL as it may be written anywhere: without
// credentials, query string or fragment, where some gateways carry keys.
func EndpointOf(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	u.User = nil
	u.RawQuery = ""
	u.Fragment = ""
	return u.String()
}
