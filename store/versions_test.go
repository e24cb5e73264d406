package store

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/harness-dev/harness/internal/testenv"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/skills"
)

var op = record.Actor{Kind: "operator", Command: "test"}

func skillTree(t *testing.T, dir, body string) string {
	t.Helper()
	testenv.WriteTree(t, dir, map[string]string{
		"tidy/SKILL.md":        "---\nname: tidy\ndescription: Tidies files. Use for tidying.\n---\n" + body + "\n",
		"tidy/references/r.md": "reference for " + body + "\n",
	})
	return filepath.Join(dir, "tidy")
}

// snapshotDir reads every file under dir, for byte-for-byte comparison.
func snapshotDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		if d.Type().IsRegular() {
			b, _ := os.ReadFile(p)
			rel, _ := filepath.Rel(dir, p)
			out[rel] = string(b)
		}
		return nil
	})
	return out
}

func sameTree(t *testing.T, a, b map[string]string) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("trees differ: %v vs %v", a, b)
	}
	for k, v := range a {
		if b[k] != v {
			t.Fatalf("%s differs: %q vs %q", k, v, b[k])
		}
	}
}

func newStore(t *testing.T) (*Store, string) {
	t.Helper()
	dir := t.TempDir()
	st, err := Open(filepath.Join(dir, "store"), nil)
	if err != nil {
		t.Fatal(err)
	}
	return st, filepath.Join(dir, "root")
}

func put(t *testing.T, st *Store, root, src string, pending bool) record.SkillVersion {
	t.Helper()
	v, err := st.Put(context.Background(), PutRequest{Name: "tidy", Dir: src, Root: root, Actor: op, Risk: skills.RiskLow, Pending: pending, Event: record.SkillPromoted})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestVersionsRollbackAndRemove(t *testing.T) {
	st, root := newStore(t)
	ctx := context.Background()
	v1 := put(t, st, root, skillTree(t, t.TempDir(), "one"), false)
	first := snapshotDir(t, filepath.Join(root, "tidy"))
	v2 := put(t, st, root, skillTree(t, t.TempDir(), "two"), false)
	if v2.Parent != v1.Version || v1.Version == v2.Version {
		t.Fatalf("v2 parent %s, v1 %s", v2.Parent, v1.Version)
	}
	if !strings.Contains(snapshotDir(t, filepath.Join(root, "tidy"))["SKILL.md"], "two") {
		t.Fatal("v2 is not live")
	}
	// The same content again is the same version, kept once.
	if again := put(t, st, root, skillTree(t, t.TempDir(), "two"), false); again.Version != v2.Version {
		t.Errorf("same tree, new digest: %s vs %s", again.Version, v2.Version)
	}

	back, err := st.Rollback(ctx, "tidy", "", op)
	if err != nil {
		t.Fatal(err)
	}
	if back.Version != v1.Version {
		t.Fatalf("rolled back to %s, want %s", back.Version, v1.Version)
	}
	sameTree(t, first, snapshotDir(t, filepath.Join(root, "tidy")))
	h, _ := st.History("tidy")
	if h.Current != v1.Version {
		t.Errorf("current = %s", h.Current)
	}
	// Named by a digest prefix.
	if _, err := st.Rollback(ctx, "tidy", strings.TrimPrefix(string(v2.Version), "blake3:")[:10], op); err != nil {
		t.Fatal(err)
	}
	if err := st.Remove(ctx, "tidy", op); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "tidy")); !os.IsNotExist(err) {
		t.Fatal("removed skill still live")
	}
	if _, err := st.Rollback(ctx, "tidy", string(v1.Version), op); err != nil {
		t.Fatalf("rollback after remove: %v", err)
	}
	sameTree(t, first, snapshotDir(t, filepath.Join(root, "tidy")))
	n, err := VerifyAudit(st.Dir, nil)
	if err != nil || n != 7 {
		t.Errorf("audit: %d lines, %v (want 7: three promotions, rollback, rollback, removed, rollback)", n, err)
	}
}

func TestPendingApproveReject(t *testing.T) {
	st, root := newStore(t)
	ctx := context.Background()
	v1 := put(t, st, root, skillTree(t, t.TempDir(), "one"), false)
	p := put(t, st, root, skillTree(t, t.TempDir(), "net"), true)
	if p.State != record.VersionPending {
		t.Fatalf("state %s", p.State)
	}
	if strings.Contains(snapshotDir(t, filepath.Join(root, "tidy"))["SKILL.md"], "net") {
		t.Fatal("a pending version went live")
	}
	ps, _ := st.Pending()
	if len(ps) != 1 || ps[0].Version != p.Version {
		t.Fatalf("pending = %+v", ps)
	}
	got, err := st.Decide(ctx, "tidy", "", true, "looked fine", op)
	if err != nil || got.State != record.VersionLive || got.Parent != v1.Version {
		t.Fatalf("approve = %+v, %v", got, err)
	}
	if !strings.Contains(snapshotDir(t, filepath.Join(root, "tidy"))["SKILL.md"], "net") {
		t.Fatal("the approved version is not live")
	}
	if _, err := st.Decide(ctx, "tidy", "", false, "no", op); codeOf(err) != "skill_version_not_found" {
		t.Errorf("nothing pending: %v", err)
	}
	put(t, st, root, skillTree(t, t.TempDir(), "bad"), true)
	rejected, err := st.Decide(ctx, "tidy", "", false, "exfiltrates", op)
	if err != nil || rejected.State != record.VersionRejected {
		t.Fatalf("reject = %+v, %v", rejected, err)
	}
	if _, err := st.Rollback(ctx, "tidy", string(rejected.Version), op); codeOf(err) != "skill_version_not_approved" {
		t.Errorf("rollback to a rejected version: %v", err)
	}
}

func TestStoreEditedByHandIsRefused(t *testing.T) {
	st, root := newStore(t)
	v1 := put(t, st, root, skillTree(t, t.TempDir(), "one"), false)
	put(t, st, root, skillTree(t, t.TempDir(), "two"), false)
	live := snapshotDir(t, filepath.Join(root, "tidy"))
	os.WriteFile(filepath.Join(st.versionDir("tidy", v1.Version), "tidy", "references", "r.md"), []byte("tampered\n"), 0o644)
	if _, err := st.Rollback(context.Background(), "tidy", "", op); codeOf(err) != "store_version_changed" {
		t.Fatalf("rollback to an edited version: %v", err)
	}
	sameTree(t, live, snapshotDir(t, filepath.Join(root, "tidy")))
}

// TestKilledPromotionLeavesTheOldVersion kills a real process at the
// last moment before the swap: the live skill is the old version, whole,
// and the next promotion cleans up what the killed one left.
func TestKilledPromotionLeavesTheOldVersion(t *testing.T) {
	if dir := os.Getenv("STORE_TEST_KILL_DIR"); dir != "" {
		st, err := Open(filepath.Join(dir, "store"), nil)
		if err != nil {
			os.Exit(3)
		}
		st.beforeSwap = func() { syscall.Kill(os.Getpid(), syscall.SIGKILL) }
		st.Put(context.Background(), PutRequest{Name: "tidy", Dir: filepath.Join(dir, "v2", "tidy"), Root: filepath.Join(dir, "root"), Actor: op, Event: record.SkillPromoted})
		os.Exit(4) // not reached: the swap was never made
	}
	dir := t.TempDir()
	st, err := Open(filepath.Join(dir, "store"), nil)
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "root")
	put(t, st, root, skillTree(t, filepath.Join(dir, "v1"), "one"), false)
	before := snapshotDir(t, filepath.Join(root, "tidy"))
	skillTree(t, filepath.Join(dir, "v2"), "two")

	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledPromotionLeavesTheOldVersion$")
	cmd.Env = append(os.Environ(), "STORE_TEST_KILL_DIR="+dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the promotion was not killed: %v\n%s", err, out.String())
	}
	sameTree(t, before, snapshotDir(t, filepath.Join(root, "tidy")))
	h, _ := st.History("tidy")
	if len(h.Versions) != 1 {
		t.Errorf("history has %d versions after a killed promotion", len(h.Versions))
	}
	if _, err := VerifyAudit(st.Dir, nil); err != nil {
		t.Errorf("audit after the kill: %v", err)
	}
	stages, _ := filepath.Glob(filepath.Join(root, stagePrefix+"*"))
	if len(stages) != 1 {
		t.Fatalf("staging directories after the kill: %v", stages)
	}
	// The next promotion completes and removes the dead one's stage.
	put(t, st, root, filepath.Join(dir, "v2", "tidy"), false)
	if stages, _ := filepath.Glob(filepath.Join(root, stagePrefix+"*")); len(stages) != 0 {
		t.Errorf("stale staging directories left: %v", stages)
	}
	if !strings.Contains(snapshotDir(t, filepath.Join(root, "tidy"))["SKILL.md"], "two") {
		t.Error("v2 not live after the retry")
	}
}

// TestAuditVerifyCatchesTampering edits the log every way a person with
// write access could and checks that verify names the first bad line.
func TestAuditVerifyCatchesTampering(t *testing.T) {
	build := func(t *testing.T, key []byte) (*Store, []string) {
		dir := t.TempDir()
		st, err := Open(filepath.Join(dir, "store"), key)
		if err != nil {
			t.Fatal(err)
		}
		root := filepath.Join(dir, "root")
		for _, body := range []string{"one", "two", "three", "four"} {
			put(t, st, root, skillTree(t, t.TempDir(), body), false)
		}
		b, _ := os.ReadFile(filepath.Join(st.Dir, record.FileSkillsAudit))
		return st, strings.SplitAfter(strings.TrimSuffix(string(b), "\n"), "\n")
	}
	write := func(st *Store, lines []string) {
		s := strings.Join(lines, "")
		if !strings.HasSuffix(s, "\n") {
			s += "\n"
		}
		os.WriteFile(filepath.Join(st.Dir, record.FileSkillsAudit), []byte(s), 0o644)
	}
	for _, tc := range []struct {
		name   string
		edit   func([]string) []string
		line   int
		reason string
	}{
		{"untouched", func(l []string) []string { return l }, 0, ""},
		{"edited line", func(l []string) []string {
			l[1] = strings.Replace(l[1], `"kind":"operator"`, `"kind":"someone"`, 1)
			return l
		}, 3, "does not follow"},
		{"removed line", func(l []string) []string { return append(l[:1:1], l[2:]...) }, 2, "sequence number 3"},
		{"reordered lines", func(l []string) []string { l[1], l[2] = l[2], l[1]; return l }, 2, "sequence number 3"},
		{"removed last line", func(l []string) []string { return l[:3] }, 4, "lines were removed from the end"},
		{"edited last line", func(l []string) []string {
			l[3] = strings.Replace(l[3], `"risk":"low"`, `"risk":"minimal"`, 1)
			return l
		}, 4, "was changed after it was written"},
		{"forged line appended", func(l []string) []string { return append(l, "\n"+l[3]) }, 5, "sequence number 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, lines := build(t, nil)
			write(st, tc.edit(lines))
			n, err := VerifyAudit(st.Dir, nil)
			if tc.line == 0 {
				if err != nil || n != 4 {
					t.Fatalf("untouched log: %d, %v", n, err)
				}
				return
			}
			ae, ok := err.(*AuditError)
			if !ok || ae.Line != tc.line || !strings.Contains(ae.Reason, tc.reason) {
				t.Fatalf("err = %v, want line %d: %q", err, tc.line, tc.reason)
			}
			// Nothing more is recorded on a log that does not verify.
			_, err = st.Put(context.Background(), PutRequest{Name: "tidy", Dir: skillTree(t, t.TempDir(), "five"), Root: filepath.Join(filepath.Dir(st.Dir), "root"), Actor: op, Event: record.SkillPromoted})
			if codeOf(err) != "skills_audit_broken" {
				t.Errorf("a change on a broken log: %v", err)
			}
		})
	}
	t.Run("sealed log rewritten without the key", func(t *testing.T) {
		key := []byte("k3y")
		st, _ := build(t, key)
		if _, err := VerifyAudit(st.Dir, key); err != nil {
			t.Fatal(err)
		}
		// Whoever lacks the key can rebuild a consistent unsealed chain
		// (and head) but not a sealed one.
		unsealed, _ := Open(filepath.Join(t.TempDir(), "store"), nil)
		root := filepath.Join(filepath.Dir(unsealed.Dir), "root")
		for _, body := range []string{"one", "two"} {
			put(t, unsealed, root, skillTree(t, t.TempDir(), body), false)
		}
		for _, f := range []string{record.FileSkillsAudit, record.FileSkillsAuditHead} {
			b, _ := os.ReadFile(filepath.Join(unsealed.Dir, f))
			os.WriteFile(filepath.Join(st.Dir, f), b, 0o644)
		}
		_, err := VerifyAudit(st.Dir, key)
		if ae, ok := err.(*AuditError); !ok || ae.Line != 1 || !strings.Contains(ae.Reason, "no seal") {
			t.Fatalf("err = %v", err)
		}
	})
}
