package yamlsafe_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/goccy/go-yaml"

	"github.com/harness-dev/harness/yamlsafe"
)

// laughs is a billion-laughs document: levels anchors, each a list of
// width aliases of the one before, under vars: as in a pipeline file.
func laughs(levels, width int) string {
	var b strings.Builder
	b.WriteString("vars:\n  l0: &l0 [lol]\n")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "  l%d: &l%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d,", i-1), width), ","))
	}
	return b.String()
}

func TestCheck(t *testing.T) {
	lim := yamlsafe.Limits{Bytes: 4096, Tokens: 500, Depth: 8, Nodes: 200}
	for _, tc := range []struct {
		name, doc string
		line      int    // 0: accepted
		msg       string // part of the refusal
	}{
		{"plain mapping", "a: 1\nb: [x, y]\nc:\n  d: e\n", 0, ""},
		{"a few aliases", "base: &b {x: 1}\none: *b\ntwo: *b\n", 0, ""},
		{"merge key", "base: &b {x: 1}\none:\n  <<: *b\n  y: 2\n", 0, ""},
		{"self reference", "a: &a [*a]\n", 0, ""},
		{"not YAML is the decoder's to refuse", "a: [\n", 0, ""},
		{"billion laughs", laughs(9, 9), 4, "expands to more than 200 YAML nodes"},
		{"laughs in a mapping", "a: &a {x: 1, y: 2}\nb: &b {p: *a, q: *a, r: *a}\nc: &c {p: *b, q: *b, r: *b}\nd: &d {p: *c, q: *c, r: *c}\ne: [*d, *d, *d]\n", 4, "expands to more than"},
		{"too big", strings.Repeat("a: b\n", 1000), 0, "bytes, more than"},
		{"too many tokens", "x: [" + strings.Repeat("1,", 300) + "1]\n", 1, "more than 500 YAML tokens"},
		{"deep flow", strings.Repeat("[", 20) + strings.Repeat("]", 20), 1, "nests deeper than 8"},
		{"deep block sequence", strings.Repeat("- ", 20) + "x\n", 1, "nests deeper than 8"},
		{"deep block mapping", deepMapping(20), 9, "nests deeper than 8"},
		{"deep through an alias", "a: &a [[[[[x]]]]]\nb: [[[[*a]]]]\n", 2, "once the alias *a is expanded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := yamlsafe.Check("f.yaml", []byte(tc.doc), lim)
			if tc.msg == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var e *yamlsafe.Error
			if !errors.As(err, &e) || !errors.Is(err, yamlsafe.ErrBounds) {
				t.Fatalf("Check = %v, want a refusal with %q", err, tc.msg)
			}
			if !strings.Contains(e.Msg, tc.msg) || e.File != "f.yaml" || e.Line != tc.line {
				t.Errorf("Check = %+v, want line %d and %q", e, tc.line, tc.msg)
			}
		})
	}
}

func deepMapping(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "%sk%d:\n", strings.Repeat("  ", i), i)
	}
	return b.String()
}

// TestBombIsRefusedCheaply: the 13-line document that once took a
// pipeline check 11 minutes and 23 GB is refused having allocated
// little, not after expanding it.
func TestBombIsRefusedCheaply(t *testing.T) {
	doc := []byte("phases:\n  - name: a\n    prompt: hi\n" + laughs(9, 9))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	err := yamlsafe.Unmarshal("bomb.yaml", doc, new(any))
	runtime.ReadMemStats(&after)
	if !errors.Is(err, yamlsafe.ErrBounds) {
		t.Fatalf("Unmarshal = %v, want a refusal", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 4<<20 {
		t.Errorf("refusing a %d-byte bomb allocated %d bytes", len(doc), got)
	}
}

// FuzzCheck: a document Check accepts decodes, aliases followed, to no
// more nodes and no deeper than the bounds.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{laughs(3, 3), laughs(6, 4), "a: &a [*a]\n", "a: &a {x: 1}\nb: {<<: *a}\n", "- - - [x, {y: *z}]\n", "a: &a [[x]]\nb: &b [*a, *a]\nc: [*b, *b, *b]\n", "? &k a\n: *k\n"} {
		f.Add(s)
	}
	lim := yamlsafe.Limits{Bytes: 2048, Tokens: 400, Depth: 12, Nodes: 300}
	f.Fuzz(func(t *testing.T, doc string) {
		if yamlsafe.Check("f.yaml", []byte(doc), lim) != nil {
			return
		}
		var v any
		if yaml.UnmarshalWithOptions([]byte(doc), &v, yaml.AllowDuplicateMapKey()) != nil {
			return
		}
		if n := size(v, 0, lim.Nodes*4); n > lim.Nodes*4 {
			t.Fatalf("accepted %q, which decodes to more than %d values", doc, lim.Nodes*4)
		}
	})
}

// size counts v's values as a tree (a value shared by aliases counts
// each time), stopping past stop.
func size(v any, n, stop int) int {
	n++
	if n > stop {
		return n
	}
	switch v := v.(type) {
	case []any:
		for _, e := range v {
			if n = size(e, n, stop); n > stop {
				return n
			}
		}
	case map[string]any:
		for _, e := range v {
			if n = size(e, n, stop); n > stop {
				return n
			}
		}
	case map[any]any:
		for _, e := range v {
			if n = size(e, n, stop); n > stop {
				return n
			}
		}
	}
	return n
}

// Reason never carries a byte of the document: a config that is a link
// to /proc/self/environ, or a key file, must not reach stderr.
func TestReasonPrintsNoSource(t *testing.T) {
	type strict struct {
		Name string `yaml:"name"`
	}
	for _, tc := range []struct {
		name, doc string
		into      any
	}{
		{"unterminated quote", "model: m\nKEY=sk-hidden: [ \"sk-hidden\n", &map[string]any{}},
		{"environ", "PATH=/bin\x00HARNESS_API_KEY=sk-hidden\x00", &map[string]any{}},
		{"unknown field", "sk-hidden: 1\n", &strict{}},
		{"type", "name: [sk-hidden]\n", &strict{}},
		{"tab", "a:\n\tsk-hidden: 1\n", &map[string]any{}},
		{"duplicate", "sk-hidden: 1\nsk-hidden: 2\n", &map[string]any{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := []yaml.DecodeOption{}
			if _, ok := tc.into.(*strict); ok {
				opts = append(opts, yaml.Strict())
			}
			err := yamlsafe.Unmarshal("f.yaml", []byte(tc.doc), tc.into, opts...)
			if err == nil {
				t.Fatal("the document decodes")
			}
			if r := yamlsafe.Reason(err); strings.Contains(r, "sk-hidden") || strings.Contains(r, "\n") {
				t.Fatalf("Reason(%v) = %q: holds the document", err, r)
			}
		})
	}
}

// FuzzReason: whatever the document, Reason is one line of valid UTF-8,
// bounded, and quotes nothing of it.
func FuzzReason(f *testing.F) {
	for _, s := range []string{"a: \"sk-hidden\n", "KEY=sk-hidden\x00X=1\x00", "a:\n\tb: 'sk-hidden'\n", "[sk-hidden", "a: b: c", "- x\ny: 1\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		var v any
		err := yamlsafe.Unmarshal("f.yaml", doc, &v)
		if err == nil {
			return
		}
		r := yamlsafe.Reason(err)
		if strings.ContainsAny(r, "\n\r\x00") || !utf8.ValidString(r) || len(r) > 300 {
			t.Fatalf("Reason = %q", r)
		}
		if strings.Contains(r, "sk-hidden") {
			t.Fatalf("Reason = %q: quotes the document", r)
		}
	})
}
