package skills

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/internal/testenv"
	"github.com/harness-dev/harness/skills/snapcache"
)

var fixedNow = func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }

// cacheTree is a small root whose files are made older than the next
// stamp, so that the cache keeps them.
func cacheTree(t testing.TB) (root, cacheDir string) {
	t.Helper()
	dir := t.TempDir()
	root, cacheDir = filepath.Join(dir, "skills"), filepath.Join(dir, "cache")
	testenv.WriteTree(t, root, map[string]string{
		"alpha/SKILL.md":           "---\nname: alpha\ndescription: Alpha. Use for alpha.\nmetadata:\n  count: 3\n  big: 18446744073709551615\n  neg: -7\n  ratio: 0.5\n  on: true\n  none: null\n  list: [a, 1, {k: v}]\n  empty: {}\n  nolist: []\n---\n# Alpha\nSee [r](references/r.md) and [gone](references/gone.md).\n",
		"alpha/references/r.md":    "reference one\n",
		"alpha/scripts/run.sh":     "#!/bin/bash\necho one\n",
		"beta/SKILL.md":            "---\nname: beta\ndescription: Beta. Use for beta.\n---\nBeta.\n",
		"beta/assets/data.txt":     "0123456789\n",
		"beta/templates/t.md":      "template\n",
		"beta/references/more.txt": "more\n",
	})
	os.Chmod(filepath.Join(root, "alpha/scripts/run.sh"), 0o755)
	waitTick(t, cacheDir)
	return root, cacheDir
}

// waitTick waits until the file system clock has moved on, so that what
// was just written is strictly older than the next stamp. (A wait for a
// condition, not a timing assertion.)
func waitTick(t testing.TB, dir string) {
	t.Helper()
	stamp := func() int64 {
		c, err := snapcache.Open(dir, "tick")
		if err != nil {
			t.Fatal(err)
		}
		return c.Stamp()
	}
	start := stamp()
	for stamp() <= start {
		time.Sleep(time.Millisecond)
	}
}

func scanWith(t *testing.T, root, cacheDir string) (*Registry, []byte) {
	t.Helper()
	opts := ScanOptions{Roots: []string{root}, Workspace: filepath.Dir(root), SandboxWorkspace: "/workspace", Now: fixedNow}
	if cacheDir != "" {
		c, err := OpenSnapshotCache(cacheDir, opts)
		if err != nil {
			t.Fatal(err)
		}
		opts.Cache = c
	}
	reg, err := Scan(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := reg.StreamJSON(&b); err != nil {
		t.Fatal(err)
	}
	return reg, b.Bytes()
}

func digestOf(t *testing.T, reg *Registry, skill, rel string) artifacts.Digest {
	t.Helper()
	s, ok := reg.Lookup(skill)
	if !ok {
		t.Fatalf("no skill %s", skill)
	}
	r, ok := s.Resource(rel)
	if !ok {
		return ""
	}
	return r.Digest
}

func TestCachedSnapshotIsByteIdentical(t *testing.T) {
	root, cacheDir := cacheTree(t)
	_, plain := scanWith(t, root, "")
	_, first := scanWith(t, root, cacheDir)
	_, second := scanWith(t, root, cacheDir)
	if !bytes.Equal(plain, first) || !bytes.Equal(plain, second) {
		t.Fatal("a cached snapshot differs from an uncached one")
	}
	c, _ := OpenSnapshotCache(cacheDir, ScanOptions{Roots: []string{root}, Workspace: filepath.Dir(root), SandboxWorkspace: "/workspace"})
	got := c.Load()
	if len(cachedResources(got)) != 5 || got.Files != 5 || got.Skills != 2 {
		t.Errorf("the cache holds %d (%d) files and %d skills, want the 5 resources and 2 skills", len(cachedResources(got)), got.Files, got.Skills)
	}
}

// TestCacheIsUsed proves a digest comes from the cache and not from the
// file: a forged entry with the file's true fingerprint is believed. (The
// cache is private to its owner for that reason, and every read of a
// file still checks its bytes against the registry.)
func TestCacheIsUsed(t *testing.T) {
	root, cacheDir := cacheTree(t)
	reg, _ := scanWith(t, root, cacheDir)
	opts := ScanOptions{Roots: []string{root}, Workspace: filepath.Dir(root), SandboxWorkspace: "/workspace"}
	c, _ := OpenSnapshotCache(cacheDir, opts)
	forged := artifacts.DigestString("not the content")
	s, _ := reg.Lookup("beta")
	for i := range s.Resources {
		if s.Resources[i].Path == "assets/data.txt" {
			s.Resources[i].Digest = forged
		}
	}
	c = snapcache.OpenAt(c.Path(), time.Now().Add(time.Hour).UnixNano())
	if err := saveCache(c, reg, nil); err != nil {
		t.Fatal(err)
	}
	got, _ := scanWith(t, root, cacheDir)
	if d := digestOf(t, got, "beta", "assets/data.txt"); d != forged {
		t.Fatalf("the cache was not used: %s", d)
	}
}

// TestCacheCatchesChanges: after each change a scan through the cache
// gives byte for byte the snapshot an uncached scan gives, whatever the
// cache held (digests, loaded skills, tree digests).
func TestCacheCatchesChanges(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, root string)
		skill  string
		rel    string
		check  func(t *testing.T, reg *Registry)
	}{
		{"same size, same second, mtime set back (touch -d)", func(t *testing.T, root string) {
			p := filepath.Join(root, "beta/assets/data.txt")
			fi, _ := os.Stat(p)
			os.WriteFile(p, []byte("9876543210\n"), 0o644)
			os.Chtimes(p, fi.ModTime(), fi.ModTime())
		}, "beta", "assets/data.txt", nil},
		{"replaced by another file of the same size", func(t *testing.T, root string) {
			p := filepath.Join(root, "alpha/references/r.md")
			fi, _ := os.Stat(p)
			os.WriteFile(p+".new", []byte("reference two\n"), 0o644)
			os.Rename(p+".new", p)
			os.Chtimes(p, fi.ModTime(), fi.ModTime())
		}, "alpha", "references/r.md", nil},
		{"permissions changed", func(t *testing.T, root string) {
			os.Chmod(filepath.Join(root, "alpha/scripts/run.sh"), 0o644)
		}, "alpha", "scripts/run.sh", func(t *testing.T, reg *Registry) {
			s, _ := reg.Lookup("alpha")
			r, _ := s.Resource("scripts/run.sh")
			if r.Executable == nil || *r.Executable {
				t.Error("the script is still recorded executable")
			}
		}},
		{"deleted", func(t *testing.T, root string) {
			os.Remove(filepath.Join(root, "beta/templates/t.md"))
		}, "beta", "templates/t.md", nil},
		{"SKILL.md edited, same size, mtime set back", func(t *testing.T, root string) {
			p := filepath.Join(root, "beta/SKILL.md")
			fi, _ := os.Stat(p)
			os.WriteFile(p, []byte("---\nname: beta\ndescription: Bxta. Use for beta.\n---\nBeta.\n"), 0o644)
			os.Chtimes(p, fi.ModTime(), fi.ModTime())
		}, "", "", func(t *testing.T, reg *Registry) {
			if s, _ := reg.Lookup("beta"); s.Description != "Bxta. Use for beta." {
				t.Errorf("description %q: the edit was missed", s.Description)
			}
		}},
		{"file renamed, same content", func(t *testing.T, root string) {
			os.Rename(filepath.Join(root, "beta/references/more.txt"), filepath.Join(root, "beta/references/most.txt"))
		}, "beta", "references/most.txt", nil},
		{"two files swapped, sizes and times kept", func(t *testing.T, root string) {
			a, b := filepath.Join(root, "beta/templates/t.md"), filepath.Join(root, "beta/references/more.txt")
			os.Rename(a, a+".x")
			os.Rename(b, a)
			os.Rename(a+".x", b)
		}, "beta", "templates/t.md", nil},
		{"file added beside SKILL.md", func(t *testing.T, root string) {
			os.WriteFile(filepath.Join(root, "beta/extra.md"), []byte("x"), 0o644)
		}, "beta", "extra.md", nil},
		{"file added in a subdirectory, which a link now names", func(t *testing.T, root string) {
			os.WriteFile(filepath.Join(root, "alpha/references/gone.md"), []byte("back"), 0o644)
		}, "alpha", "references/gone.md", func(t *testing.T, reg *Registry) {
			s, _ := reg.Lookup("alpha")
			if r, _ := s.Resource("references/gone.md"); !r.Referenced {
				t.Error("the new file is not marked referenced")
			}
		}},
		{"subdirectory removed", func(t *testing.T, root string) {
			os.RemoveAll(filepath.Join(root, "beta/templates"))
		}, "", "", nil},
		{"file replaced by a link", func(t *testing.T, root string) {
			p := filepath.Join(root, "beta/assets/data.txt")
			os.Remove(p)
			os.Symlink("../references/more.txt", p)
		}, "", "", nil},
		{"skill directory replaced by a link to a copy", func(t *testing.T, root string) {
			os.Rename(filepath.Join(root, "beta"), filepath.Join(root, "beta-copy"))
			os.Symlink("beta-copy", filepath.Join(root, "beta"))
		}, "", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, cacheDir := cacheTree(t)
			scanWith(t, root, cacheDir)
			tc.change(t, root)
			cached, cachedJSON := scanWith(t, root, cacheDir)
			_, plainJSON := scanWith(t, root, "")
			if !bytes.Equal(cachedJSON, plainJSON) {
				t.Fatalf("after the change the cached snapshot differs from an uncached one:\n%s", firstDiff(cachedJSON, plainJSON))
			}
			if tc.skill != "" {
				want := artifacts.Digest("")
				if b, err := os.ReadFile(filepath.Join(root, tc.skill, tc.rel)); err == nil {
					want = artifacts.DigestString(string(b))
				}
				if got := digestOf(t, cached, tc.skill, tc.rel); got != want {
					t.Errorf("%s/%s: digest %q, want %q", tc.skill, tc.rel, got, want)
				}
			}
			if tc.check != nil {
				tc.check(t, cached)
			}
		})
	}
}

// TestTreeDigestIsCached proves a skill's tree digest comes from the
// cache when every one of its files kept its fingerprint: a forged one is
// believed. A same-size edit with the time set back ends it.
func TestTreeDigestIsCached(t *testing.T) {
	root, cacheDir := cacheTree(t)
	reg, _ := scanWith(t, root, cacheDir)
	forged := artifacts.DigestString("not the tree")
	for i := range reg.Skills {
		if reg.Skills[i].Name == "beta" {
			reg.Skills[i].TreeDigest = forged
		}
	}
	c, _ := OpenSnapshotCache(cacheDir, ScanOptions{Roots: []string{root}, Workspace: filepath.Dir(root), SandboxWorkspace: "/workspace"})
	c = snapcache.OpenAt(c.Path(), time.Now().Add(time.Hour).UnixNano())
	if err := saveCache(c, reg, nil); err != nil {
		t.Fatal(err)
	}
	got, _ := scanWith(t, root, cacheDir)
	if s, _ := got.Lookup("beta"); s.TreeDigest != forged {
		t.Fatalf("the cached tree digest was not used: %s", s.TreeDigest)
	}
	p := filepath.Join(root, "beta/assets/data.txt")
	fi, _ := os.Stat(p)
	testenv.Must(t, os.WriteFile(p, []byte("9876543210\n"), 0o644))
	testenv.Must(t, os.Chtimes(p, fi.ModTime(), fi.ModTime()))
	got, cachedJSON := scanWith(t, root, cacheDir)
	_, plainJSON := scanWith(t, root, "")
	if s, _ := got.Lookup("beta"); s.TreeDigest == forged || !bytes.Equal(cachedJSON, plainJSON) {
		t.Fatalf("after an edit the cached tree digest was kept:\n%s", firstDiff(cachedJSON, plainJSON))
	}
}

func TestRacilyCleanEntriesAreNotKept(t *testing.T) {
	dir := t.TempDir()
	c := snapcache.OpenAt(filepath.Join(dir, "x.cache"), 1000)
	res := func(p string, m, ct int64) Resource {
		return Resource{HostPath: p, Stat: strings.Join([]string{"1", "2", "3", strconv.FormatInt(m, 10), strconv.FormatInt(ct, 10)}, ":"), Digest: artifacts.DigestString(p)}
	}
	reg := &Registry{Skills: []Skill{{Resources: []Resource{res("old", 999, 999), res("mtime-now", 1000, 999), res("ctime-now", 999, 1000), res("later", 1001, 1001)}}}}
	if err := saveCache(c, reg, nil); err != nil {
		t.Fatal(err)
	}
	got := cachedResources(c.Load())
	if len(got) != 1 || got["old"] == nil {
		t.Errorf("kept %v, want only the strictly older entry", got)
	}
	// A corrupt or foreign cache is empty, never an error.
	os.WriteFile(c.Path(), []byte("garbage"), 0o600)
	if len(cachedResources(c.Load())) != 0 {
		t.Error("a corrupt cache was used")
	}
}

// TestSkillEntryIsUsed proves a loaded skill comes from the cache when
// its fingerprints are unchanged: a forged description is believed (the
// cache is private for that reason), and an edit of SKILL.md ends it.
func TestSkillEntryIsUsed(t *testing.T) {
	root, cacheDir := cacheTree(t)
	scanWith(t, root, cacheDir)
	opts := ScanOptions{Roots: []string{root}, Workspace: filepath.Dir(root), SandboxWorkspace: "/workspace"}
	// Every file is older than the stamp of a cache opened a tick later.
	waitTick(t, root)
	c, _ := OpenSnapshotCache(cacheDir, opts)
	got := c.Load()
	var entries []skillEntry
	for dir := range got.Dirs() {
		raw := got.Skill(dir)
		if raw == nil {
			continue
		}
		d := snapcache.NewDecoder(raw, nil)
		stats := decodePathStats(&d)
		s, diags := decodeSkill(&d, dir, new(Skill))
		if s == nil {
			t.Fatalf("the entry for %s does not decode", dir)
		}
		if s.Name == "beta" {
			s.Description = "forged"
		}
		raw, ok := encodeSkillEntry(dir, stats, diags, s)
		if !ok {
			t.Fatal("not encodable")
		}
		entries = append(entries, skillEntry{Dir: dir, Raw: raw})
	}
	if len(entries) != 2 {
		t.Fatalf("%d skill entries, want 2", len(entries))
	}
	if err := saveCache(c, &Registry{}, entries); err != nil {
		t.Fatal(err)
	}
	reg, _ := scanWith(t, root, cacheDir)
	if s, _ := reg.Lookup("beta"); s.Description != "forged" {
		t.Fatalf("the skill entry was not used: %q", s.Description)
	}
	os.WriteFile(filepath.Join(root, "beta/SKILL.md"), []byte("---\nname: beta\ndescription: Beta again. Use for beta.\n---\nBeta.\n"), 0o644)
	reg, _ = scanWith(t, root, cacheDir)
	if s, _ := reg.Lookup("beta"); s.Description != "Beta again. Use for beta." {
		t.Fatalf("an edited SKILL.md kept the cached skill: %q", s.Description)
	}
}

func firstDiff(a, b []byte) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			lo := max(0, i-80)
			return string(a[lo:min(len(a), i+80)]) + "\n---\n" + string(b[lo:min(len(b), i+80)])
		}
	}
	return "(lengths differ)"
}

// A cache directory others can write is not used: whoever writes it
// decides which digests a later scan keeps.
func TestSnapshotCacheRefusesSharedDir(t *testing.T) {
	dir := t.TempDir()
	testenv.Must(t, os.Chmod(dir, 0o777))
	if _, err := OpenSnapshotCache(dir, ScanOptions{Roots: []string{t.TempDir()}}); err == nil || !strings.Contains(err.Error(), "writable by other users") {
		t.Fatalf("err = %v, want a refusal of a shared directory", err)
	}
	testenv.Must(t, os.Chmod(dir, 0o755))
	if _, err := OpenSnapshotCache(dir, ScanOptions{Roots: []string{t.TempDir()}}); err != nil {
		t.Fatal(err)
	}
}

// Frontmatter values survive the cache file with their Go types, and
// nil stays apart from empty.
func TestFrontmatterValuesRoundTrip(t *testing.T) {
	fm := map[string]any{
		"s": "text", "empty": "", "b": true, "f": false, "float": 0.5, "zero": 0.0,
		"int": 3, "i64": int64(-7), "min": int64(math.MinInt64), "max": math.MaxInt64, "u64": uint64(18446744073709551615), "u8": uint8(0), "i32": int32(0),
		"nil": nil, "list": []any{"a", 1, map[string]any{"k": "v"}, []any{}}, "emptymap": map[string]any{}, "emptylist": []any{},
		"nilmap": map[string]any(nil), "nillist": []any(nil),
	}
	var e snapcache.Encoder
	if !e.Value(fm, 0) {
		t.Fatal("not representable")
	}
	d := snapcache.NewDecoder(e.B, nil)
	if got := d.Value(0); !d.Done() || !reflect.DeepEqual(got, fm) {
		t.Fatalf("round trip:\n got %#v\nwant %#v", got, fm)
	}
	if (&snapcache.Encoder{}).Value(map[string]any{"x": struct{}{}}, 0) {
		t.Error("an unknown type was accepted (it must make the skill uncacheable)")
	}
	deep := any("leaf")
	for range 65 {
		deep = []any{deep}
	}
	if (&snapcache.Encoder{}).Value(deep, 0) {
		t.Error("a value nested too deep was accepted")
	}
}

// cachedResources decodes every file entry of a cache as the Resource a
// reuse would copy, by host path.
func cachedResources(x *snapcache.Index) map[string]*Resource {
	out := map[string]*Resource{}
	var arena snapcache.Arena
	for dir := range x.Dirs() {
		files, _ := filesOf(x, dir, &arena, nil)
		for _, f := range files {
			p := dir[:f.prefix] + string(f.suffix)
			st := f.st
			stat := fmt.Sprintf("%d:%d:%d:%d:%d", st.dev, st.ino, st.size, st.mtime, st.ctime)
			if f.stat != stat {
				stat = "the arena's written fingerprint " + f.stat + " is not " + stat
			}
			out[p] = &Resource{HostPath: p, Digest: f.digest, Size: f.size, ContentKind: f.contentKind, Shebang: f.shebang, Runtime: f.runtime, Stat: stat}
		}
	}
	return out
}

// FuzzSnapshotCacheDecode feeds arbitrary bytes to every decoder of the
// cache file: a corrupt file is empty, never a panic or a huge
// allocation. The seeds are a real cache and prefixes of it.
func FuzzSnapshotCacheDecode(f *testing.F) {
	root, cacheDir := cacheTree(f)
	opts := ScanOptions{Roots: []string{root}, Workspace: filepath.Dir(root), SandboxWorkspace: "/workspace", Now: fixedNow}
	c, err := OpenSnapshotCache(cacheDir, opts)
	if err != nil {
		f.Fatal(err)
	}
	opts.Cache = c
	if _, err := Scan(context.Background(), opts); err != nil {
		f.Fatal(err)
	}
	good, err := os.ReadFile(c.Path())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	for _, n := range []int{0, len(snapcache.Magic), len(good) / 3, len(good) / 2, len(good) - 1} {
		f.Add(good[:n])
	}
	// Whatever the bytes, a record decodes to no more entries than it has
	// bytes (a length is checked against what is left, so a corrupt file
	// cannot make the decoder allocate for a count it does not hold), and
	// the same bytes decode to the same skill.
	decode := func(raw []byte, dir string, arena *snapcache.Arena) ([]pathStat, *Skill, []Diagnostic) {
		d := snapcache.NewDecoder(raw, arena)
		stats := decodePathStats(&d)
		s, diags := decodeSkill(&d, dir, new(Skill))
		return stats, s, diags
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		x, ok := snapcache.Decode(b)
		if !ok {
			return
		}
		var arena snapcache.Arena
		for dir := range x.Dirs() {
			if files, _ := filesOf(x, dir, &arena, nil); len(files) > len(x.FileEntries(dir)) {
				t.Fatalf("%d file entries from %d bytes", len(files), len(x.FileEntries(dir)))
			}
			raw := x.Skill(dir)
			if raw == nil {
				continue
			}
			stats, s, diags := decode(raw, dir, &arena)
			if len(stats) > len(raw) {
				t.Fatalf("%d path stats from %d bytes", len(stats), len(raw))
			}
			stats2, s2, diags2 := decode(raw, dir, &arena)
			if !reflect.DeepEqual(stats, stats2) || !reflect.DeepEqual(s, s2) || !reflect.DeepEqual(diags, diags2) {
				t.Fatalf("one record decoded two ways: %+v / %+v", s, s2)
			}
			entryOlder(raw, x.Stamp)
		}
	})
}
