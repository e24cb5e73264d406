package snapcache

import (
	"strconv"
	"strings"
	"testing"
)

// Strings made by an arena keep their bytes across chunk changes and
// when a writer outgrows the room it asked for.
func TestStringArena(t *testing.T) {
	var a Arena
	var got, want []string
	for i := range 5000 {
		n := strconv.Itoa(i)
		got = append(got, a.Bytes([]byte("p"+n)), a.Join("/root/"+n, "SKILL.md"),
			a.Appended(1, func(b []byte) []byte { return append(b, strings.Repeat(n, 50)...) }), a.Bytes(nil))
		want = append(want, "p"+n, "/root/"+n+"/SKILL.md", strings.Repeat(n, 50), "")
	}
	got = append(got, a.Bytes(make([]byte, 3*arenaChunk)))
	want = append(want, string(make([]byte, 3*arenaChunk)))
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("string %d is %.40q, want %.40q", i, got[i], want[i])
		}
	}
}
