package skills

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/internal/testenv"
	"golang.org/x/sys/unix"
)

// marker is a digest no file has: a rescan that keeps it reused the
// earlier record, one that replaced it read the file.
var marker = artifacts.Digest("blake3:" + strings.Repeat("0", 64))

// TestScanPrevious: a rescan with an earlier snapshot reuses a digest
// only for a file whose fingerprint is unchanged and whose times are
// older than the earlier scan's start by racyMargin. A file changed
// twice within one file-system tick keeps its fingerprint; the test
// stands for that by forging the recorded fingerprint to the new one.
func TestScanPrevious(t *testing.T) {
	for _, tc := range []struct {
		name string
		// rewrite changes x.md (same size) after the first scan; forge
		// then records the new fingerprint as the old one.
		rewrite, forge bool
		// aged moves the first scan's start past racyMargin, as if the
		// files had been written well before it.
		aged bool
		// decoded passes the first snapshot through its JSON form.
		decoded  bool
		wantKept bool
	}{
		{name: "unchanged, old enough", aged: true, wantKept: true},
		{name: "unchanged, too recent", wantKept: false},
		{name: "rewritten, times moved", rewrite: true, aged: true, wantKept: false},
		{name: "racily clean: rewritten in the same tick", rewrite: true, forge: true, wantKept: false},
		{name: "same fingerprint, old enough: only the times rule stood in the way", rewrite: true, forge: true, aged: true, wantKept: true},
		{name: "decoded snapshot, old enough", aged: true, decoded: true, wantKept: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			testenv.WriteTree(t, root, map[string]string{
				"a/SKILL.md":        skillMD("a", "d", ""),
				"a/references/x.md": "old!",
			})
			first := scanOne(t, root, Limits{})
			s, _ := first.Lookup("a")
			x, _ := s.Resource("references/x.md")
			x.Digest = marker
			content := "old!"
			if tc.rewrite {
				content = "new!"
				p := filepath.Join(root, "a", "references", "x.md")
				testenv.WriteTree(t, root, map[string]string{"a/references/x.md": content})
				// A distinct modification time, whatever the file
				// system's granularity: the forged case sets it back.
				old := time.Now().Add(-time.Hour)
				testenv.Must(t, os.Chtimes(p, old, old))
				if tc.forge {
					x.Stat = statOf(t, p)
				}
			}
			if tc.aged {
				first.scanStart = time.Now().Add(racyMargin + time.Second)
			}
			prev := first
			if tc.decoded {
				b, err := json.Marshal(first)
				testenv.Must(t, err)
				prev = &Registry{}
				testenv.Must(t, json.Unmarshal(b, prev))
			}
			second, err := Scan(context.Background(), ScanOptions{Roots: []string{first.Roots[0].Path}, Previous: prev})
			testenv.Must(t, err)
			got := digestOf(t, second, "a", "references/x.md")
			if kept := got == marker; kept != tc.wantKept {
				t.Errorf("earlier digest kept = %v, want %v", kept, tc.wantKept)
			}
			if !tc.wantKept && got != artifacts.DigestString(content) {
				t.Errorf("digest %s is not the file's", got)
			}
		})
	}
}

func statOf(t *testing.T, p string) string {
	t.Helper()
	var st unix.Stat_t
	testenv.Must(t, unix.Stat(p, &st))
	return statKey(&st)
}
