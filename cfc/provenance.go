package cfc

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// The provenance filter grows with what it is given: a first filter of
// 2^21 bits (256 KiB), then each new one twice the size when the last has
// taken what it can hold at a low false-match rate, up to 32 MiB in all.
// A run that reads little touches little memory; past the cap, inserts go
// to the last filter, false matches grow, and enforce-strict denies more,
// never less. With three hashes per piece, 16 bits per inserted piece keep
// a made-up piece's false-match chance near 0.5%; three piece sizes per
// byte make that about 64 MiB of untrusted text before the cap is felt.
const (
	firstFilterBits = 1 << 21
	maxFilterBits   = 1 << 28 // the sum of all filters stays below this
	bitsPerPiece    = 16
)

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
	filters []*bloom
	total   uint64 // bits in all filters
	bytes   int64  // normalized untrusted bytes seen
}

type bloom struct {
	bits     []uint64
	size     uint64 // bits
	inserted uint64
}

// NewProvenance returns an empty filter.
func NewProvenance() *Provenance {
	p := &Provenance{}
	p.grow(firstFilterBits)
	return p
}

func (p *Provenance) grow(size uint64) {
	p.filters = append(p.filters, &bloom{bits: make([]uint64, size/64), size: size})
	p.total += size
}

// current is the filter inserts go to, growing a new one when the last is
// full and the cap allows.
func (p *Provenance) current() *bloom {
	last := p.filters[len(p.filters)-1]
	if last.inserted*bitsPerPiece >= last.size && p.total+2*last.size <= maxFilterBits {
		p.grow(2 * last.size)
		last = p.filters[len(p.filters)-1]
	}
	return last
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

// hash gives a piece's two hashes for its three bit positions (double
// hashing) from one 64-bit FNV-1a; a fixed hash keeps decisions the same
// in every replay.
func hash(s string) (h1, h2 uint64) {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h & 0xffffffff, h>>32 | 1
}

func (p *Provenance) set(s string) {
	f := p.current()
	h1, h2 := hash(s)
	for i := uint64(0); i < 3; i++ {
		b := (h1 + i*h2) % f.size
		f.bits[b/64] |= 1 << (b % 64)
	}
	f.inserted++
}

func (p *Provenance) has(s string) bool {
	h1, h2 := hash(s)
	for _, f := range p.filters {
		found := true
		for i := uint64(0); i < 3 && found; i++ {
			b := (h1 + i*h2) % f.size
			found = f.bits[b/64]&(1<<(b%64)) != 0
		}
		if found {
			return true
		}
	}
	return false
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
