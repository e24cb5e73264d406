package snapcache

import (
	"encoding/binary"
	"encoding/hex"
	"math"
	"reflect"
	"slices"
	"strings"

	"github.com/harness-dev/harness/artifacts"
)

// The cache's binary encoding. It replaced gob because a
// warm scan of 2,000 skills spent most of its time decoding: gob reads a
// value as one message into fresh memory and builds every entry up
// front, and on small virtual machines touching fresh memory is what
// costs. This layout is small (paths are stored as the suffix they add to
// a directory, digests as 32 bytes, fingerprints as numbers) and lazy: a
// scan indexes the records by directory and decodes one only when a
// worker asks for it.
//
// Every length is checked against what is left, and a value that does not
// decode makes the whole cache empty: the file is private to its owner
// (PrivateDir), but a torn or foreign file must never make a scan fail.

// Encoder appends values to B.
type Encoder struct{ B []byte }

func (e *Encoder) Uvarint(v uint64) { e.B = binary.AppendUvarint(e.B, v) }
func (e *Encoder) Varint(v int64)   { e.B = binary.AppendVarint(e.B, v) }
func (e *Encoder) Str(s string)     { e.Uvarint(uint64(len(s))); e.B = append(e.B, s...) }
func (e *Encoder) Raw(b []byte)     { e.Uvarint(uint64(len(b))); e.B = append(e.B, b...) }
func (e *Encoder) Byte(c byte)      { e.B = append(e.B, c) }

func (e *Encoder) Bool(v bool) {
	if v {
		e.B = append(e.B, 1)
	} else {
		e.B = append(e.B, 0)
	}
}

// Length writes a slice's length so that nil and empty stay apart (the
// registry writes null for one and [] for the other).
func (e *Encoder) Length(n int, isNil bool) {
	if isNil {
		e.Uvarint(0)
		return
	}
	e.Uvarint(uint64(n) + 1)
}

// Rel writes s as the length of the prefix it shares with base and the
// rest: a path below a skill's directory costs only what it adds.
func (e *Encoder) Rel(base, s string) {
	n := 0
	for n < len(base) && n < len(s) && base[n] == s[n] {
		n++
	}
	e.Uvarint(uint64(n))
	e.Str(s[n:])
}

// Joined writes s, which is almost always base + "/" + name, as one byte
// when it is.
func (e *Encoder) Joined(base, name, s string) {
	if len(s) == len(base)+1+len(name) && strings.HasPrefix(s, base) && s[len(base)] == '/' && strings.HasSuffix(s, name) {
		e.Uvarint(0)
		return
	}
	e.Uvarint(1)
	e.Rel(base, s)
}

// Digest writes a blake3 digest as its 32 bytes when its written form
// comes back exactly from them, else as text.
func (e *Encoder) Digest(d artifacts.Digest) {
	s := string(d)
	if h, ok := strings.CutPrefix(s, "blake3:"); ok && len(h) == 64 {
		var sum [32]byte
		if _, err := hex.Decode(sum[:], []byte(h)); err == nil && hex.EncodeToString(sum[:]) == h {
			e.B = append(e.B, 1)
			e.B = append(e.B, sum[:]...)
			return
		}
	}
	e.B = append(e.B, 0)
	e.Str(s)
}

// Decoder reads what Encoder wrote. After the first error every read
// returns a zero value and OK reports false.
type Decoder struct {
	b   []byte
	bad bool
	// arena, when set, holds the strings decoded (see Arena).
	arena *Arena
}

// NewDecoder reads b; strings are carved from arena when it is not nil.
func NewDecoder(b []byte, arena *Arena) Decoder { return Decoder{b: b, arena: arena} }

// OK reports whether everything read so far decoded.
func (d *Decoder) OK() bool { return !d.bad }

// Done reports whether everything decoded and nothing is left.
func (d *Decoder) Done() bool { return !d.bad && len(d.b) == 0 }

// Fail marks what is being read as corrupt.
func (d *Decoder) Fail() { d.bad, d.b = true, nil }

// SetArena makes the strings read from here on come from a.
func (d *Decoder) SetArena(a *Arena) { d.arena = a }

func (d *Decoder) Uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.Fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

// Varint undoes binary.AppendVarint's zig-zag encoding.
func (d *Decoder) Varint() int64 {
	u := d.Uvarint()
	v := int64(u >> 1)
	if u&1 != 0 {
		v = ^v
	}
	return v
}

func (d *Decoder) Int() int {
	v := d.Varint()
	if v < math.MinInt || v > math.MaxInt {
		d.Fail()
		return 0
	}
	return int(v)
}

func (d *Decoder) Byte() byte {
	if len(d.b) == 0 {
		d.Fail()
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *Decoder) Raw() []byte {
	n := d.Uvarint()
	if n > uint64(len(d.b)) {
		d.Fail()
		return nil
	}
	out := d.b[:n:n]
	d.b = d.b[n:]
	return out
}

func (d *Decoder) Str() string {
	if d.arena != nil {
		return d.arena.Bytes(d.Raw())
	}
	return string(d.Raw())
}

// Word is Str for the few values that recur in every entry: one of
// known costs no allocation.
func (d *Decoder) Word(known []string) string {
	b := d.Raw()
	for _, w := range known {
		if string(b) == w {
			return w
		}
	}
	return string(b)
}

func (d *Decoder) Bool() bool {
	switch d.Byte() {
	case 0:
		return false
	case 1:
		return true
	}
	d.Fail()
	return false
}

// Length reads what Encoder.Length wrote; every element takes at least a
// byte, so a length beyond what is left is corrupt (and never allocated).
func (d *Decoder) Length() (n int, isNil bool) {
	v := d.Uvarint()
	if v == 0 {
		return 0, true
	}
	if v-1 > uint64(len(d.b)) {
		d.Fail()
		return 0, false
	}
	return int(v - 1), false
}

func (d *Decoder) Rel(base string) string {
	n := d.Uvarint()
	suffix := d.Raw()
	if n > uint64(len(base)) {
		d.Fail()
		return ""
	}
	if len(suffix) == 0 {
		return base[:n]
	}
	if d.arena != nil {
		return d.arena.Appended(int(n)+len(suffix), func(b []byte) []byte { return append(append(b, base[:n]...), suffix...) })
	}
	return base[:n] + string(suffix)
}

func (d *Decoder) Joined(base, name string) string {
	switch d.Uvarint() {
	case 0:
		if d.arena != nil {
			return d.arena.Join(base, name)
		}
		return base + "/" + name
	case 1:
		return d.Rel(base)
	}
	d.Fail()
	return ""
}

func (d *Decoder) Digest() artifacts.Digest {
	switch d.Byte() {
	case 0:
		return artifacts.Digest(d.Str())
	case 1:
		if len(d.b) < 32 {
			d.Fail()
			return ""
		}
		sum := d.b[:32]
		d.b = d.b[32:]
		if d.arena != nil {
			return artifacts.Digest(d.arena.Appended(7+64, func(b []byte) []byte { return hex.AppendEncode(append(b, "blake3:"...), sum) }))
		}
		var text [7 + 64]byte
		copy(text[:], "blake3:")
		hex.Encode(text[7:], sum)
		return artifacts.Digest(text[:])
	}
	d.Fail()
	return ""
}

// Frontmatter values keep their Go types (what jsonValue produces: maps,
// lists, strings, booleans, nil, integers and floats) through the cache.
const (
	fmNil = iota
	fmMap
	fmList
	fmString
	fmFalse
	fmTrue
	fmFloat
	fmInt
	fmInt8
	fmInt16
	fmInt32
	fmInt64
	fmUint
	fmUint8
	fmUint16
	fmUint32
	fmUint64
)

// maxValueDepth bounds nesting both ways: a deeper frontmatter is not
// cached, and a deeper record is corrupt.
const maxValueDepth = 64

// Value writes v, or reports that it cannot (an unknown type or too
// deep), which makes the skill uncacheable.
func (e *Encoder) Value(v any, depth int) bool {
	if depth > maxValueDepth {
		return false
	}
	switch x := v.(type) {
	case nil:
		e.B = append(e.B, fmNil)
	case map[string]any:
		e.B = append(e.B, fmMap)
		e.Length(len(x), x == nil)
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			e.Str(k)
			if !e.Value(x[k], depth+1) {
				return false
			}
		}
	case []any:
		e.B = append(e.B, fmList)
		e.Length(len(x), x == nil)
		for _, el := range x {
			if !e.Value(el, depth+1) {
				return false
			}
		}
	case string:
		e.B = append(e.B, fmString)
		e.Str(x)
	case bool:
		if x {
			e.B = append(e.B, fmTrue)
		} else {
			e.B = append(e.B, fmFalse)
		}
	case float64:
		e.B = append(e.B, fmFloat)
		e.B = binary.LittleEndian.AppendUint64(e.B, math.Float64bits(x))
	default:
		rv := reflect.ValueOf(v)
		tag, ok := intTags[rv.Type()]
		if !ok {
			return false
		}
		e.B = append(e.B, tag)
		if tag >= fmUint {
			e.Uvarint(rv.Uint())
		} else {
			e.Varint(rv.Int())
		}
	}
	return true
}

func (d *Decoder) Value(depth int) any {
	if depth > maxValueDepth {
		d.Fail()
		return nil
	}
	switch tag := d.Byte(); tag {
	case fmNil:
		return nil
	case fmMap:
		n, isNil := d.Length()
		if isNil {
			return map[string]any(nil)
		}
		m := make(map[string]any, n)
		for range n {
			k := d.Str()
			m[k] = d.Value(depth + 1)
		}
		return m
	case fmList:
		n, isNil := d.Length()
		if isNil {
			return []any(nil)
		}
		l := make([]any, 0, n)
		for range n {
			l = append(l, d.Value(depth+1))
		}
		return l
	case fmString:
		return d.Str()
	case fmFalse:
		return false
	case fmTrue:
		return true
	case fmFloat:
		if len(d.b) < 8 {
			d.Fail()
			return nil
		}
		f := math.Float64frombits(binary.LittleEndian.Uint64(d.b))
		d.b = d.b[8:]
		return f
	case fmInt, fmInt8, fmInt16, fmInt32, fmInt64:
		return reflect.ValueOf(d.Varint()).Convert(intTypes[tag-fmInt]).Interface()
	case fmUint, fmUint8, fmUint16, fmUint32, fmUint64:
		return reflect.ValueOf(d.Uvarint()).Convert(intTypes[tag-fmInt]).Interface()
	}
	d.Fail()
	return nil
}

// intTypes are the integer types a frontmatter value can have, in the
// order of their tags (fmInt first): a value is written with its type's
// tag and given that type back when read.
var intTypes = []reflect.Type{
	reflect.TypeFor[int](), reflect.TypeFor[int8](), reflect.TypeFor[int16](), reflect.TypeFor[int32](), reflect.TypeFor[int64](),
	reflect.TypeFor[uint](), reflect.TypeFor[uint8](), reflect.TypeFor[uint16](), reflect.TypeFor[uint32](), reflect.TypeFor[uint64](),
}

var intTags = func() map[reflect.Type]byte {
	m := map[reflect.Type]byte{}
	for i, t := range intTypes {
		m[t] = fmInt + byte(i)
	}
	return m
}()
