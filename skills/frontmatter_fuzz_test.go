package skills

import (
	"bytes"
	"encoding/json"
	"reflect"
	"regexp"
	"testing"

	"github.com/goccy/go-yaml"
)

func FuzzSplitFrontmatter(f *testing.F) {
	for _, s := range []string{"---\nname: a\n---\nbody", "\xef\xbb\xbf---\r\na: 1\r\n---\r\n", "---\n---\n", "no", "---\nx: '---'\n---\n", "---"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		fm, _, body, off, err := splitFrontmatter(in)
		if err != nil {
			return
		}
		if off > len(in) || !bytes.Equal(in[off:], body) {
			t.Fatalf("bodyOffset %d does not point at the body", off)
		}
		// Re-joining splits to the same parts.
		joined := append(append([]byte("---\n"), fm...), append([]byte("---\n"), body...)...)
		fm2, _, body2, _, err := splitFrontmatter(joined)
		if err != nil || !bytes.Equal(fm, fm2) || !bytes.Equal(body, body2) {
			t.Fatalf("round trip changed the parts: %q/%q vs %q/%q (%v)", fm, body, fm2, body2, err)
		}
	})
}

func FuzzParseFrontmatter(f *testing.F) {
	for _, s := range []string{"name: a\ndescription: b\n", "a: [1, 2]\nb: {c: d}\n", "1: 2\n", "x: .nan\n", "- a\n", "a: 1\na: 2\n", "? [a]\n: b\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		m, err := parseFrontmatter(in, 2)
		if err != nil {
			return
		}
		if _, err := json.Marshal(m); err != nil {
			t.Fatalf("parsed frontmatter does not encode as JSON: %v", err)
		}
	})
}

var specName = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

func FuzzValidName(f *testing.F) {
	for _, s := range []string{"pattern-dev", "a", "-a", "a-", "a--b", "A", "a_b", "", "ä"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		got := ValidName(name)
		want := len(name) <= 64 && specName.MatchString(name)
		if got != want {
			t.Fatalf("ValidName(%q) = %v, want %v", name, got, want)
		}
	})
}

// FuzzPlainFrontmatter holds the fast path to goccy/go-yaml: whatever it
// accepts must decode to exactly what the library makes of it.
func FuzzPlainFrontmatter(f *testing.F) {
	for _, s := range []string{
		"name: a\ndescription: b\n", "name: pdf-tools\ndescription: Fill PDF forms. Use when asked (or told) to.\n",
		"a: yes\n", "a: No\n", "a: b: c\n", "a: b # c\n", "a:  spaced\n", "a: trailing \n", "a: x\na: y\n",
		"a-b_c: It's 100% done, isn't it?\n", "k: x\n\n", "k: x", "k: e1\n", "k: inf\n", "k: nan\n", "k: N\n",
		"k: a@b.c <d> & e=f+g!\n", "Key: Value\n", "k: x;y,z/(w)\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		got, ok := plainFrontmatter(in)
		if !ok {
			return
		}
		var v any
		if err := yaml.UnmarshalWithOptions(in, &v); err != nil {
			t.Fatalf("fast path accepted %q, the library refuses it: %v", in, err)
		}
		want, isMap := jsonValue(v).(map[string]any)
		if !isMap || !reflect.DeepEqual(got, want) {
			t.Fatalf("fast path read %q as %#v, the library as %#v", in, got, v)
		}
	})
}
