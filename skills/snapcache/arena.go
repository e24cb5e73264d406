package snapcache

import "unsafe"

// Arena makes many short strings out of few allocations. A warm
// scan of a large root decodes hundreds of thousands of them (paths,
// digests, fingerprints), each its own allocation before; on this kind of
// machine every fresh page of heap costs a fault, so their number, not
// their bytes, was the cost. Bytes are only ever appended to a chunk and
// never changed once a string refers to them, which is what unsafe.String
// requires; a full chunk is left to its strings and a new one started.
type Arena struct {
	chunk []byte
}

const arenaChunk = 16 << 10

// room returns the arena's chunk with at least n bytes free.
func (a *Arena) room(n int) []byte {
	if cap(a.chunk)-len(a.chunk) < n {
		a.chunk = make([]byte, 0, max(n, arenaChunk))
	}
	return a.chunk
}

// seal turns the bytes appended to the chunk since start into a string.
func (a *Arena) seal(b []byte, start int) string {
	a.chunk = b
	if len(b) == start {
		return ""
	}
	return unsafe.String(&b[start], len(b)-start)
}

// Bytes is p as a string.
func (a *Arena) Bytes(p []byte) string {
	b := a.room(len(p))
	start := len(b)
	return a.seal(append(b, p...), start)
}

// Join is base + "/" + name.
func (a *Arena) Join(base, name string) string {
	b := a.room(len(base) + 1 + len(name))
	start := len(b)
	b = append(b, base...)
	b = append(b, '/')
	return a.seal(append(b, name...), start)
}

// Appended is a string of what f appends, which must be at most n bytes.
func (a *Arena) Appended(n int, f func([]byte) []byte) string {
	b := a.room(n)
	start := len(b)
	// Should f outgrow its room, append moves b to a fresh array that
	// then becomes the chunk; strings made before keep the old one.
	return a.seal(f(b), start)
}
