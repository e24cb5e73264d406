package gitsource

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

const (
	idA = "1111111111111111111111111111111111111111"
	idB = "1111222222222222222222222222222222222222"
	idT = "3333333333333333333333333333333333333333"
)

var listing = []byte(idA + "\tHEAD\n" + idA + "\trefs/heads/main\n" + idB + "\trefs/heads/v1\n" + idT + "\trefs/tags/v1\n" + idA + "\trefs/tags/v1^{}\n" +
	idB + "\trefs/heads/evil:refs/heads/main\n" + idB + "\trefs/heads/sp ace\n")

func TestPickWant(t *testing.T) {
	for _, tc := range []struct {
		ref, want string
	}{
		{"main", "refs/heads/main"},
		{"v1", "refs/tags/v1"}, // a tag before a branch of one name
		{"refs/heads/v1", "refs/heads/v1"},
		{idB, idB},
		{strings.ToUpper(idT[:1]) + idT[1:], idT},
		{"3333", "refs/tags/v1"},
		{"1111", ""}, // two commits begin so
		{"11112", "refs/heads/v1"},
		{"111", ""}, // too short to be an id
		{"nope", ""},
		{"evil:refs/heads/main", ""},
		{"sp ace", ""},
		{"HEAD", ""},
	} {
		got, ok := pickWant(listing, tc.ref)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("pickWant(%q) = %q, %v; want %q", tc.ref, got, ok, tc.want)
		}
	}
}

// FuzzPickWant: whatever a server lists, what is asked for is a listed
// ref name git reads as one ref, or the commit id asked for.
func FuzzPickWant(f *testing.F) {
	f.Add(listing, "v1")
	f.Add(listing, "1111")
	f.Add([]byte(idA+"\t-refs/x\n"+idA+"\trefs/\x00\n"), "x")
	f.Fuzz(func(t *testing.T, list []byte, ref string) {
		got, ok := pickWant(list, ref)
		if !ok {
			return
		}
		switch {
		case plumbing.IsHash(got):
			if got != strings.ToLower(got) {
				t.Fatalf("pickWant(%q) = %q", ref, got)
			}
		case !strings.HasPrefix(got, "refs/") || strings.ContainsAny(got, ": \t\n\x00") || !strings.Contains(string(list), got):
			t.Fatalf("pickWant(%q) = %q", ref, got)
		}
	})
}

// TestTooManyProcessesStopped: a git command whose process group grows
// past maxProcs (here a shell alias starting 40 sleeps; in a fetch, git
// fetching what a partial clone lacks, again and again) is killed whole,
// with a *LimitError, long before the sleeps end.
func TestTooManyProcessesStopped(t *testing.T) {
	f := &fetcher{ctx: context.Background(), url: "test", dir: t.TempDir(), lim: DefaultLimits()}
	start := time.Now()
	_, err := f.git("-c", "alias.fork=!for i in $(seq 40); do sleep 30 & done; wait", "fork")
	var le *LimitError
	if !errors.As(err, &le) || le.What != "processes" || time.Since(start) > 20*time.Second {
		t.Fatalf("git fork = %v after %v; want a processes LimitError", err, time.Since(start))
	}
	time.Sleep(100 * time.Millisecond)
	if n := groupSize(f.lastPID); n != 0 {
		t.Errorf("%d processes of the group left", n)
	}
}
