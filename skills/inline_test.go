package skills

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/zeebo/blake3"
	"golang.org/x/sys/unix"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/internal/testenv"
)

// A file the loader digests while listing (inlineDigest) must get the
// very record the digest workers would give it, and anything the loader
// does not digest (too large, not a regular file, a link out of its
// directory, a failure) must be left untouched for them.
func TestInlineDigestMatchesDigestWorkers(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	dir := filepath.Join(root, "s", "scripts")
	// A two-byte rune split by the 8 KiB sniff: text, not binary.
	split := strings.Repeat("a", sniffLen-1) + "é"
	testenv.WriteTree(t, root, map[string]string{
		"s/SKILL.md":         skillMD("s", "d", ""),
		"s/scripts/run.sh":   "#!/usr/bin/env bash\necho hi\n",
		"s/scripts/empty.ts": "",
		"s/scripts/nul.bin":  "a\x00b",
		"s/scripts/bad.txt":  "\xff\xfe",
		"s/scripts/split.md": split,
		"s/scripts/max.md":   strings.Repeat("m", inlineMax),
		"s/scripts/big.md":   strings.Repeat("b", inlineMax+1),
		"s/scripts/sub/x.md": "in a subdirectory",
		"s/target.md":        "outside the listed directory, inside the root",
		"s/other/real.md":    "another directory",
	})
	testenv.Must(t, os.WriteFile(filepath.Join(base, "outside.md"), []byte("outside the root"), 0o644))
	testenv.Must(t, unix.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	testenv.Must(t, os.Symlink("run.sh", filepath.Join(dir, "sibling.sh")))
	testenv.Must(t, os.Symlink("../target.md", filepath.Join(dir, "up.md")))
	testenv.Must(t, os.Symlink(filepath.Join(base, "outside.md"), filepath.Join(dir, "out.md")))

	sc, err := newScanner([]string{root}, "", "", DefaultLimits())
	testenv.Must(t, err)
	defer sc.close()
	r := sc.roots[0]
	dirfd, err := openDirBeneathFD(r, "s/scripts")
	testenv.Must(t, err)
	defer unix.Close(dirfd)
	var read atomic.Int64
	in := inlineDigest{buf: make([]byte, inlineMax), h: blake3.New(), read: &read}

	for _, tc := range []struct {
		name   string
		inline bool // digested by the loader
	}{
		{"run.sh", true},
		{"empty.ts", true},
		{"nul.bin", true},
		{"bad.txt", true},
		{"split.md", true},
		{"max.md", true},
		{"sibling.sh", true}, // a link within the directory is followed
		{"big.md", false},
		{"fifo", false},
		{"sub", false},
		{"up.md", false},  // out of the directory: the workers decide
		{"out.md", false}, // out of the root
		{"gone.md", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fresh := func() Resource {
				rel := "scripts/" + tc.name
				return Resource{Path: rel, Kind: resourceKind(rel), HostPath: filepath.Join(dir, tc.name), Diagnostics: []Diagnostic{}}
			}
			before := read.Load()
			got := fresh()
			in.digest(dirfd, tc.name, &got)
			if got.digested != tc.inline || (read.Load() > before) != tc.inline {
				t.Fatalf("digested inline = %v (read count +%d), want %v", got.digested, read.Load()-before, tc.inline)
			}
			if !tc.inline {
				if untouched := fresh(); !sameResource(got, untouched) {
					t.Fatalf("left for the workers, but changed: %+v", got)
				}
				return
			}
			want := fresh()
			digestResource(digestJob{root: r, rel: "s/scripts/" + tc.name, res: &want}, make([]byte, 256<<10), blake3.New())
			got.digested = false
			if !sameResource(got, want) {
				t.Errorf("inline record\n%+v\nworkers' record\n%+v", got, want)
			}
		})
	}
}

// A scan that digests inline gives the files the loader left alone to
// the digest workers: the large file's digest is right, and the special
// file and the link out of the root get their diagnostics once.
func TestScanDigestsWhatInlineLeaves(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	big := bytes.Repeat([]byte("0123456789abcdef"), inlineMax/8)
	testenv.WriteTree(t, root, map[string]string{
		"s/SKILL.md":            skillMD("s", "d", ""),
		"s/references/small.md": "small",
		"s/references/big.md":   string(big),
	})
	testenv.Must(t, unix.Mkfifo(filepath.Join(root, "s/references/fifo"), 0o644))
	testenv.Must(t, os.WriteFile(filepath.Join(base, "outside.md"), []byte("x"), 0o644))
	testenv.Must(t, os.Symlink(filepath.Join(base, "outside.md"), filepath.Join(root, "s/references/out.md")))
	reg, err := Scan(context.Background(), ScanOptions{Roots: []string{root}, Workspace: root})
	testenv.Must(t, err)
	if len(reg.Skills) != 1 {
		t.Fatalf("skills %d, want 1; diagnostics %v", len(reg.Skills), reg.Diagnostics)
	}
	byPath := map[string]Resource{}
	for _, r := range reg.Skills[0].Resources {
		byPath[r.Path] = r
	}
	if r := byPath["references/big.md"]; r.Digest != artifacts.DigestBytes(big) || r.Size != int64(len(big)) {
		t.Errorf("big.md: digest %s size %d, want %s and %d", r.Digest, r.Size, artifacts.DigestBytes(big), len(big))
	}
	if r := byPath["references/small.md"]; r.Digest != artifacts.DigestBytes([]byte("small")) {
		t.Errorf("small.md: digest %s", r.Digest)
	}
	codes := map[string][]string{}
	for _, d := range reg.Skills[0].Diagnostics {
		codes[filepath.Base(d.Path)] = append(codes[filepath.Base(d.Path)], d.Code)
	}
	for _, r := range reg.Skills[0].Resources {
		for _, d := range r.Diagnostics {
			codes[filepath.Base(d.Path)] = append(codes[filepath.Base(d.Path)], d.Code)
		}
	}
	for _, name := range []string{"fifo", "out.md"} {
		if len(codes[name]) != 1 {
			t.Errorf("%s: diagnostics %v, want exactly one", name, codes[name])
		}
	}
}

func sameResource(a, b Resource) bool {
	return a.Path == b.Path && a.Kind == b.Kind && a.HostPath == b.HostPath && a.Size == b.Size &&
		a.Digest == b.Digest && a.ContentKind == b.ContentKind && a.Shebang == b.Shebang &&
		a.Runtime == b.Runtime && a.Stat == b.Stat && a.digested == b.digested &&
		len(a.Diagnostics) == len(b.Diagnostics)
}
