package cfc

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// provenanceBits sizes the provenance filter: 2^27 bits, 16 MiB per run.
// With three hashes per gram and three gram sizes per byte, it stays
// below a 1% chance that a made-up 16-byte value matches up to about
// 100 MiB of untrusted text; past that, false matches grow, which makes
// enforce-strict deny more, never less.
const provenanceBits = 1 << 27

// gramSizes are the lengths of the pieces every untrusted text is cut
// into. An argument is looked up by pieces of the largest size it holds.
var gramSizes = [...]int{4, 8, 16}

// MinArgument is the shortest argument value the provenance check looks
// at: shorter values match everywhere.
const MinArgument = 4

// Provenance remembers all untrusted text a run has seen, in a fixed 16
// MiB, without forgetting any of it: every 4-, 8- and 16-byte piece of the
// normalized text goes into a Bloom filter. A value is "from context" when
// every piece of it is in the filter. The filter can answer yes wrongly
// (then enforce-strict denies a call it could have allowed), never no
// wrongly: a value copied from anything the run read is always found.
type Provenance struct {
	bits  []uint64
	bytes int64 // normalized untrusted bytes seen
}

// NewProvenance returns an empty filter.
func NewProvenance() *Provenance {
	return &Provenance{bits: make([]uint64, provenanceBits/64)}
}

// Add records an untrusted text.
func (p *Provenance) Add(text string) {
	t := Normalize(text)
	p.bytes += int64(len(t))
	for _, g := range gramSizes {
		for i := 0; i+g <= len(t); i++ {
			p.set(t[i : i+g])
		}
	}
}

// Seen is the number of normalized untrusted bytes added.
func (p *Provenance) Seen() int64 { return p.bytes }

// Contains reports whether s (normalized) may occur in the untrusted text.
func (p *Provenance) Contains(s string) bool {
	t := Normalize(s)
	if len(t) < MinArgument || p.bytes == 0 {
		return false
	}
	g := gramSizes[0]
	for _, size := range gramSizes {
		if len(t) >= size {
			g = size
		}
	}
	for i := 0; i+g <= len(t); i++ {
		if !p.has(t[i : i+g]) {
			return false
		}
	}
	return true
}

// The filter's three bit positions per piece come from two halves of one
// 64-bit FNV-1a hash (double hashing); a fixed hash keeps decisions the
// same in every replay.
func positions(s string) [3]uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	h1, h2 := h&0xffffffff, h>>32|1
	var out [3]uint64
	for i := range out {
		out[i] = (h1 + uint64(i)*h2) % provenanceBits
	}
	return out
}

func (p *Provenance) set(s string) {
	for _, b := range positions(s) {
		p.bits[b/64] |= 1 << (b % 64)
	}
}

func (p *Provenance) has(s string) bool {
	for _, b := range positions(s) {
		if p.bits[b/64]&(1<<(b%64)) == 0 {
			return false
		}
	}
	return true
}

// Normalize is the form both sides of a provenance comparison take:
// Unicode NFC (so a composed and a decomposed "é" are one text), and every
// run of white space as one space, trimmed (so re-wrapped or re-indented
// text is the same text).
func Normalize(s string) string {
	s = norm.NFC.String(s)
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}
