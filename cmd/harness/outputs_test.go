package main

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

func TestTargetsIn(t *testing.T) {
	takes := func(n string) bool {
		return n == "prompt" || n == "result-file" || n == "output-last-message" || n == "model"
	}
	tests := []struct {
		args []string
		want map[string]string
	}{
		{[]string{"--result-file", "r.json", "--model", "m"}, map[string]string{"result-file": "r.json"}},
		{[]string{"--result-file=r.json", "--output-last-message=a.md"}, map[string]string{"result-file": "r.json", "output-last-message": "a.md"}},
		{[]string{"--prompt", "--result-file", "--workspace", "ws"}, map[string]string{}},
		{[]string{"--max-turn", "3", "--result-file", "r.json"}, map[string]string{"result-file": "r.json"}},
		{[]string{"--", "--result-file", "x"}, map[string]string{}},
		{[]string{"--result-file"}, map[string]string{"result-file": ""}},
	}
	for _, tt := range tests {
		got := targetsIn(tt.args, takes)
		if len(got) != len(tt.want) {
			t.Errorf("%q: %v, want %v", tt.args, got, tt.want)
			continue
		}
		for k, v := range tt.want {
			if got[k] != v {
				t.Errorf("%q: %s = %q, want %q", tt.args, k, got[k], v)
			}
		}
	}
}

func FuzzTargetsIn(f *testing.F) {
	f.Add("--result-file\x00r.json\x00--prompt\x00--result-file")
	f.Add("--result-file=\x00--\x00-")
	takes := func(n string) bool { return len(n)%2 == 0 }
	f.Fuzz(func(t *testing.T, joined string) {
		rest := strings.Split(joined, "\x00")
		got := targetsIn(rest, takes)
		// What follows "--" is arguments, never flags: cutting it off
		// changes nothing.
		before := rest
		if i := slices.Index(rest, "--"); i >= 0 {
			before = rest[:i]
		}
		if cut := targetsIn(before, takes); !maps.Equal(cut, got) {
			t.Fatalf("%q: %v, but %v without what follows --", rest, got, cut)
		}
		// Every target found was written on the command line as that
		// flag's value, inline or as the next argument (a flag given no value
		// names none).
		for name, val := range got {
			if name != "result-file" && name != "output-last-message" {
				t.Fatalf("%q: found %q", rest, name)
			}
			written := false
			for i, a := range before {
				flag := strings.TrimLeft(a, "-")
				if strings.HasPrefix(a, "-") && (flag == name+"="+val || flag == name && (val == "" || i+1 < len(before) && before[i+1] == val)) {
					written = true
				}
			}
			if !written {
				t.Fatalf("%q: %s = %q was not written as its value", rest, name, val)
			}
		}
	})
}
