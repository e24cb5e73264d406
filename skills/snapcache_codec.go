package skills

import "github.com/harness-dev/harness/skills/snapcache"

// What the snapshot cache's records hold of this package's types, in
// snapcache's encoding.

// words are the values that recur in every entry (kinds, content kinds,
// runtimes, severities): decoded without an allocation.
var words = []string{"", KindReference, KindAsset, KindTemplate, KindScript, KindOther, "text", "binary", SeverityError, SeverityWarning, SeverityInfo}

func encodeStat(e *snapcache.Encoder, st statNums) {
	e.Uvarint(st.dev)
	e.Uvarint(st.ino)
	e.Varint(st.size)
	e.Varint(st.mtime)
	e.Varint(st.ctime)
}

func decodeStat(d *snapcache.Decoder) statNums {
	return statNums{dev: d.Uvarint(), ino: d.Uvarint(), size: d.Varint(), mtime: d.Varint(), ctime: d.Varint()}
}

func encodeDiagnostics(e *snapcache.Encoder, ds []Diagnostic) {
	e.Length(len(ds), ds == nil)
	for _, d := range ds {
		e.Str(d.Severity)
		e.Str(d.Code)
		e.Str(d.Detail)
		e.Str(d.Path)
		e.Varint(int64(d.Line))
	}
}

func decodeDiagnostics(d *snapcache.Decoder) []Diagnostic {
	n, isNil := d.Length()
	if isNil || !d.OK() {
		return nil
	}
	ds := make([]Diagnostic, 0, n)
	for range n {
		ds = append(ds, Diagnostic{Severity: d.Word(words), Code: d.Str(), Detail: d.Str(), Path: d.Str(), Line: d.Int()})
	}
	if !d.OK() {
		return nil
	}
	return ds
}
