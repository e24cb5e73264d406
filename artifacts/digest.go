package artifacts

import (
	"encoding/hex"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/zeebo/blake3"
)

// Digest is a content digest in its written form, "blake3:<64 hex>".
// Keeping the algorithm in the string lets a later version change it without
// a reader mistaking one kind of digest for another.
type Digest string

const digestPrefix = "blake3:"

// DigestBytes returns the digest of b.
func DigestBytes(b []byte) Digest {
	sum := blake3.Sum256(b)
	return Digest(digestPrefix + hex.EncodeToString(sum[:]))
}

// DigestString returns the digest of s.
func DigestString(s string) Digest { return DigestBytes([]byte(s)) }

// DigestReader streams r through the hash and returns the digest and the
// number of bytes read. Files are never read whole into memory to hash them.
func DigestReader(r io.Reader) (Digest, int64, error) {
	h := NewHasher()
	n, err := io.Copy(h, r)
	if err != nil {
		return "", n, err
	}
	return h.Digest(), n, nil
}

// Hasher accumulates bytes into a Digest. Fields are gathered in a small
// buffer first, and the blake3 state (over 8 KiB) is made only once they
// outgrow it: a registry digest is tens of thousands of short fields in
// thousands of small per-skill digests, and both each Write into blake3
// and each fresh state have a cost.
type Hasher struct {
	h   *blake3.Hasher // nil until buf first outgrows its bound
	buf []byte
}

// NewHasher returns an empty Hasher.
func NewHasher() *Hasher { return &Hasher{} }

// NewHasherSize returns an empty Hasher with room for about n bytes of
// fields, which spares growing its buffer (page faults on fresh memory
// are most of that cost here) when the caller knows what comes.
func NewHasherSize(n int) *Hasher { return &Hasher{buf: make([]byte, 0, min(n, 16<<10+256))} }

func (h *Hasher) Write(p []byte) (int, error) {
	h.flush()
	return h.h.Write(p)
}

// flush moves the buffered fields into the blake3 state, making it.
func (h *Hasher) flush() {
	if h.h == nil {
		h.h = blake3.New()
	}
	if len(h.buf) > 0 {
		h.h.Write(h.buf)
		h.buf = h.buf[:0]
	}
}

// Reset empties h for reuse, keeping its buffer: a scan digests
// thousands of skill trees one after another on each worker.
func (h *Hasher) Reset() {
	h.h, h.buf = nil, h.buf[:0]
}

// Clone returns a Hasher that goes on from what h has been given, apart
// from h: a digest over a growing prefix (a conversation) need not hash
// the prefix again.
func (h *Hasher) Clone() *Hasher {
	c := &Hasher{buf: slices.Clone(h.buf)}
	if h.h != nil {
		c.h = h.h.Clone()
	}
	return c
}

// WriteField adds a length-prefixed field. Digests over lists (a skill tree,
// a registry, a run identity) use it so that ("ab","c") and ("a","bc") never
// collide.
func (h *Hasher) WriteField(s string) {
	h.buf = strconv.AppendInt(h.buf, int64(len(s)), 10)
	h.buf = append(h.buf, ':')
	h.buf = append(h.buf, s...)
	if len(h.buf) >= 16<<10 {
		h.flush()
	}
}

// Digest returns the digest of everything written so far.
func (h *Hasher) Digest() Digest {
	if h.h == nil {
		sum := blake3.Sum256(h.buf)
		return Digest(digestPrefix + hex.EncodeToString(sum[:]))
	}
	h.flush()
	return Digest(digestPrefix + hex.EncodeToString(h.h.Sum(nil)))
}

// Valid reports whether d has the written form "blake3:<64 lowercase hex>".
func (d Digest) Valid() bool {
	s, ok := strings.CutPrefix(string(d), digestPrefix)
	if !ok || len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
