package store

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/skills"
)

// TestLockFollowsLive: whatever makes a version live (put, approve,
// rollback) leaves skills.lock.json pinning that version, and a removal
// leaves no entry; "" is no entry.
func TestLockFollowsLive(t *testing.T) {
	type step struct {
		do   string // live, pending, bare (no entry kept), approve, reject, rollback, rollback-to, remove, hand (an entry written for what is live)
		arg  string // the body (and pinned commit) of a put, the body of the version to roll back to
		want string
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"approval pins the approved version", []step{{"live", "a", "a"}, {"pending", "b", "a"}, {"approve", "", "b"}}},
		{"a rejection leaves the pin", []step{{"live", "a", "a"}, {"pending", "b", "a"}, {"reject", "", "a"}}},
		{"a rollback pins what it makes live", []step{{"live", "a", "a"}, {"live", "b", "b"}, {"rollback", "", "a"}, {"rollback-to", "b", "b"}}},
		{"a rollback to an approved version pins it", []step{{"live", "a", "a"}, {"pending", "b", "a"}, {"approve", "", "b"}, {"rollback", "", "a"}, {"rollback-to", "b", "b"}}},
		{"a removal drops the pin, a rollback brings it back", []step{{"live", "a", "a"}, {"remove", "", ""}, {"rollback", "", "a"}}},
		{"a version kept without an entry drops the pin", []step{{"live", "a", "a"}, {"bare", "b", ""}, {"rollback", "", "a"}, {"rollback-to", "b", ""}}},
		{"an entry that pins what a bare version holds stays", []step{{"bare", "a", ""}, {"hand", "h", "h"}, {"rollback-to", "a", "h"}, {"live", "b", "b"}, {"rollback-to", "a", ""}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st, root := newStore(t)
			ctx := context.Background()
			versions := map[string]artifacts.Digest{}
			for i, s := range tc.steps {
				var err error
				switch s.do {
				case "live", "pending", "bare":
					var lock *LockEntry
					if s.do != "bare" {
						lock = &LockEntry{Source: "git", Git: &GitPin{URL: "https://example.invalid/s.git", Commit: s.arg, Path: "tidy"}}
					}
					var v record.SkillVersion
					v, err = st.Put(ctx, PutRequest{Name: "tidy", Dir: skillTree(t, t.TempDir(), s.arg), Root: root, Actor: op, Risk: skills.RiskLow,
						Pending: s.do == "pending", Event: record.SkillInstalled, Lock: lock})
					versions[s.arg] = v.Version
				case "approve", "reject":
					_, err = st.Decide(ctx, "tidy", "", s.do == "approve", "r", op)
				case "rollback":
					_, err = st.Rollback(ctx, "tidy", "", op)
				case "rollback-to":
					_, err = st.Rollback(ctx, "tidy", string(versions[s.arg]), op)
				case "remove":
					err = st.Remove(ctx, "tidy", op)
				case "hand":
					reg, serr := skills.Scan(ctx, skills.ScanOptions{Roots: []string{root}})
					if serr != nil {
						t.Fatal(serr)
					}
					sk, _ := reg.Lookup("tidy")
					lock, _ := ReadLock(root)
					lock.Skills["tidy"] = LockEntry{Source: "git", TreeDigest: sk.TreeDigest, SkillDigest: sk.Digest, Git: &GitPin{Commit: s.arg}}
					err = artifacts.WriteJSON(filepath.Join(root, fileSkillsLock), lock)
				default:
					t.Fatalf("step %q", s.do)
				}
				if err != nil {
					t.Fatalf("step %d %s %s: %v", i, s.do, s.arg, err)
				}
				lock, err := ReadLock(root)
				if err != nil {
					t.Fatal(err)
				}
				got := ""
				if e, ok := lock.Skills["tidy"]; ok {
					got = "(no git pin)"
					if e.Git != nil {
						got = e.Git.Commit
					}
				}
				if got != s.want {
					t.Fatalf("after step %d (%s %s) the lock pins %q, want %q", i, s.do, s.arg, got, s.want)
				}
			}
		})
	}
}
