package artifacts

import (
	"bytes"
	"encoding/json"
	"regexp"
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
	}
	return r
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
	if bearer.Match(b) {
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
// written, for a journal event to reference the file by.
func (r *Redactor) WriteJSONDigest(path string, v any) (Digest, error) {
	var buf bytes.Buffer
	if s, ok := v.(JSONStreamer); ok {
		if err := s.StreamJSON(&buf); err != nil {
			return "", err
		}
	} else {
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			return "", err
		}
	}
	data := r.Bytes(buf.Bytes())
	return DigestBytes(data), WriteFile(path, data, 0o644)
}
