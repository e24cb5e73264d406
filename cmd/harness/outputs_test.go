package main

import (
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
	f.Fuzz(func(t *testing.T, joined string) {
		targetsIn(strings.Split(joined, "\x00"), func(n string) bool { return len(n)%2 == 0 })
	})
}
