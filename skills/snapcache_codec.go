package skills

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"

	"github.com/harness-dev/harness/artifacts"
)

// The snapshot cache's own binary encoding. It replaced gob because a
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

var errCacheCorrupt = errors.New("snapshot cache: corrupt")

type encoder struct{ b []byte }

func (e *encoder) uvarint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *encoder) varint(v int64)   { e.b = binary.AppendVarint(e.b, v) }
func (e *encoder) str(s string)     { e.uvarint(uint64(len(s))); e.b = append(e.b, s...) }
func (e *encoder) raw(b []byte)     { e.uvarint(uint64(len(b))); e.b = append(e.b, b...) }

func (e *encoder) boolean(v bool) {
	if v {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
}

// length writes a slice's length so that nil and empty stay apart (the
// registry writes null for one and [] for the other).
func (e *encoder) length(n int, isNil bool) {
	if isNil {
		e.uvarint(0)
		return
	}
	e.uvarint(uint64(n) + 1)
}

// rel writes s as the length of the prefix it shares with base and the
// rest: a path below a skill's directory costs only what it adds.
func (e *encoder) rel(base, s string) {
	n := 0
	for n < len(base) && n < len(s) && base[n] == s[n] {
		n++
	}
	e.uvarint(uint64(n))
	e.str(s[n:])
}

// joined writes s, which is almost always base + "/" + name, as one byte
// when it is.
func (e *encoder) joined(base, name, s string) {
	if len(s) == len(base)+1+len(name) && strings.HasPrefix(s, base) && s[len(base)] == '/' && strings.HasSuffix(s, name) {
		e.uvarint(0)
		return
	}
	e.uvarint(1)
	e.rel(base, s)
}

// digest writes a blake3 digest as its 32 bytes when its written form
// comes back exactly from them, else as text.
func (e *encoder) digest(d artifacts.Digest) {
	s := string(d)
	if h, ok := strings.CutPrefix(s, "blake3:"); ok && len(h) == 64 {
		var sum [32]byte
		if _, err := hex.Decode(sum[:], []byte(h)); err == nil && hex.EncodeToString(sum[:]) == h {
			e.b = append(e.b, 1)
			e.b = append(e.b, sum[:]...)
			return
		}
	}
	e.b = append(e.b, 0)
	e.str(s)
}

func (e *encoder) stat(st statNums) {
	e.uvarint(st.dev)
	e.uvarint(st.ino)
	e.varint(st.size)
	e.varint(st.mtime)
	e.varint(st.ctime)
}

func (e *encoder) diagnostics(ds []Diagnostic) {
	e.length(len(ds), ds == nil)
	for _, d := range ds {
		e.str(d.Severity)
		e.str(d.Code)
		e.str(d.Detail)
		e.str(d.Path)
		e.varint(int64(d.Line))
	}
}

// decoder reads what encoder wrote. After the first error every read
// returns a zero value and ok reports false.
type decoder struct {
	b   []byte
	bad bool
	// arena, when set, holds the strings decoded (see stringArena).
	arena *stringArena
}

func (d *decoder) ok() bool { return !d.bad }

func (d *decoder) fail() { d.bad, d.b = true, nil }

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

// varint undoes binary.AppendVarint's zig-zag encoding.
func (d *decoder) varint() int64 {
	u := d.uvarint()
	v := int64(u >> 1)
	if u&1 != 0 {
		v = ^v
	}
	return v
}

func (d *decoder) int() int {
	v := d.varint()
	if v < math.MinInt || v > math.MaxInt {
		d.fail()
		return 0
	}
	return int(v)
}

func (d *decoder) byte1() byte {
	if len(d.b) == 0 {
		d.fail()
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) raw() []byte {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail()
		return nil
	}
	out := d.b[:n:n]
	d.b = d.b[n:]
	return out
}

func (d *decoder) str() string {
	if d.arena != nil {
		return d.arena.bytes(d.raw())
	}
	return string(d.raw())
}

// word is str for the few values that recur in every entry (kinds,
// content kinds, runtimes, severities): known ones cost no allocation.
func (d *decoder) word() string {
	b := d.raw()
	switch string(b) {
	case "":
		return ""
	case KindReference:
		return KindReference
	case KindAsset:
		return KindAsset
	case KindTemplate:
		return KindTemplate
	case KindScript:
		return KindScript
	case KindOther:
		return KindOther
	case "text":
		return "text"
	case "binary":
		return "binary"
	}
	return string(b)
}

func (d *decoder) boolean() bool {
	switch d.byte1() {
	case 0:
		return false
	case 1:
		return true
	}
	d.fail()
	return false
}

// length reads what encoder.length wrote; every element takes at least a
// byte, so a length beyond what is left is corrupt (and never allocated).
func (d *decoder) length() (n int, isNil bool) {
	v := d.uvarint()
	if v == 0 {
		return 0, true
	}
	if v-1 > uint64(len(d.b)) {
		d.fail()
		return 0, false
	}
	return int(v - 1), false
}

func (d *decoder) rel(base string) string {
	n := d.uvarint()
	suffix := d.raw()
	if n > uint64(len(base)) {
		d.fail()
		return ""
	}
	if len(suffix) == 0 {
		return base[:n]
	}
	if d.arena != nil {
		return d.arena.appended(int(n)+len(suffix), func(b []byte) []byte { return append(append(b, base[:n]...), suffix...) })
	}
	return base[:n] + string(suffix)
}

func (d *decoder) joined(base, name string) string {
	switch d.uvarint() {
	case 0:
		if d.arena != nil {
			return d.arena.join(base, name)
		}
		return base + "/" + name
	case 1:
		return d.rel(base)
	}
	d.fail()
	return ""
}

func (d *decoder) digest() artifacts.Digest {
	switch d.byte1() {
	case 0:
		return artifacts.Digest(d.str())
	case 1:
		if len(d.b) < 32 {
			d.fail()
			return ""
		}
		sum := d.b[:32]
		d.b = d.b[32:]
		if d.arena != nil {
			return artifacts.Digest(d.arena.appended(7+64, func(b []byte) []byte { return hex.AppendEncode(append(b, "blake3:"...), sum) }))
		}
		var text [7 + 64]byte
		copy(text[:], "blake3:")
		hex.Encode(text[7:], sum)
		return artifacts.Digest(text[:])
	}
	d.fail()
	return ""
}

func (d *decoder) stat() statNums {
	return statNums{dev: d.uvarint(), ino: d.uvarint(), size: d.varint(), mtime: d.varint(), ctime: d.varint()}
}

func (d *decoder) diagnostics() []Diagnostic {
	n, isNil := d.length()
	if isNil || d.bad {
		return nil
	}
	ds := make([]Diagnostic, 0, n)
	for range n {
		ds = append(ds, Diagnostic{Severity: d.word(), Code: d.str(), Detail: d.str(), Path: d.str(), Line: d.int()})
	}
	if d.bad {
		return nil
	}
	return ds
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

// value writes v, or reports that it cannot (an unknown type or too
// deep), which makes the skill uncacheable.
func (e *encoder) value(v any, depth int) bool {
	if depth > maxValueDepth {
		return false
	}
	switch x := v.(type) {
	case nil:
		e.b = append(e.b, fmNil)
	case map[string]any:
		e.b = append(e.b, fmMap)
		e.length(len(x), x == nil)
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			e.str(k)
			if !e.value(x[k], depth+1) {
				return false
			}
		}
	case []any:
		e.b = append(e.b, fmList)
		e.length(len(x), x == nil)
		for _, el := range x {
			if !e.value(el, depth+1) {
				return false
			}
		}
	case string:
		e.b = append(e.b, fmString)
		e.str(x)
	case bool:
		if x {
			e.b = append(e.b, fmTrue)
		} else {
			e.b = append(e.b, fmFalse)
		}
	case float64:
		e.b = append(e.b, fmFloat)
		e.b = binary.LittleEndian.AppendUint64(e.b, math.Float64bits(x))
	default:
		rv := reflect.ValueOf(v)
		tag, ok := intTags[rv.Type()]
		if !ok {
			return false
		}
		e.b = append(e.b, tag)
		if tag >= fmUint {
			e.uvarint(rv.Uint())
		} else {
			e.varint(rv.Int())
		}
	}
	return true
}

func (d *decoder) value(depth int) any {
	if depth > maxValueDepth {
		d.fail()
		return nil
	}
	switch tag := d.byte1(); tag {
	case fmNil:
		return nil
	case fmMap:
		n, isNil := d.length()
		if isNil {
			return map[string]any(nil)
		}
		m := make(map[string]any, n)
		for range n {
			k := d.str()
			m[k] = d.value(depth + 1)
		}
		return m
	case fmList:
		n, isNil := d.length()
		if isNil {
			return []any(nil)
		}
		l := make([]any, 0, n)
		for range n {
			l = append(l, d.value(depth+1))
		}
		return l
	case fmString:
		return d.str()
	case fmFalse:
		return false
	case fmTrue:
		return true
	case fmFloat:
		if len(d.b) < 8 {
			d.fail()
			return nil
		}
		f := math.Float64frombits(binary.LittleEndian.Uint64(d.b))
		d.b = d.b[8:]
		return f
	case fmInt, fmInt8, fmInt16, fmInt32, fmInt64:
		return reflect.ValueOf(d.varint()).Convert(intTypes[tag-fmInt]).Interface()
	case fmUint, fmUint8, fmUint16, fmUint32, fmUint64:
		return reflect.ValueOf(d.uvarint()).Convert(intTypes[tag-fmInt]).Interface()
	}
	d.fail()
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
