package pipeline

import (
	"path/filepath"
	"testing"
)

func TestUnitRunDir(t *testing.T) {
	dir := "/ci/download/p1"
	for _, tc := range []struct {
		name     string
		version  int
		unit     string
		recorded string
		ok       bool
	}{
		{"relative, where harness puts it", 2, "spec", "phases/spec", true},
		{"relative, not cleaned", 2, "spec", "phases/./spec", true},
		{"leads outside", 2, "spec", "../../elsewhere/spec", false},
		{"absolute", 2, "spec", "/ci/download/p1/phases/spec", false},
		{"another unit's", 2, "docs", "phases/spec", false},
		{"a set-aside attempt", 2, "spec", "phases/spec.attempt-1", false},
		{"the runs directory itself", 2, "spec", "phases", false},
		{"empty", 2, "spec", "", false},
		{"version 1 in place", 1, "spec", "/ci/download/p1/phases/spec", true},
		{"version 1 written elsewhere", 1, "spec", "/home/ci/p1/phases/spec", false},
		{"version 1 relative", 1, "spec", "phases/spec", false},
		{"a unit name with a separator", 2, "a/../spec", "phases/spec", false},
		{"an empty unit name", 2, "", "phases", false},
		{"a unit name of dots", 2, "..", ".", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rel, err := unitRunDir(tc.version, dir, pipelineLayout, tc.unit, tc.recorded)
			if (err == nil) != tc.ok {
				t.Fatalf("unitRunDir(%q) = %q, %v; want ok %v", tc.recorded, rel, err, tc.ok)
			}
			if tc.ok && rel != filepath.Join("phases", tc.unit) {
				t.Fatalf("unitRunDir(%q) = %q, want phases/%s", tc.recorded, rel, tc.unit)
			}
		})
	}
}

// FuzzUnitRunDir holds the one rule every reader finds a unit's run by: a
// recorded path is accepted only as the unit's own directory beneath the
// set directory, whatever bytes it holds.
func FuzzUnitRunDir(f *testing.F) {
	for _, s := range []string{"phases/spec", "../phases/spec", "phases/spec/..", "/p1/phases/spec", "phases//spec", "phases/spec\x00", "batch/spec"} {
		f.Add(2, "spec", s)
		f.Add(1, "spec", s)
	}
	f.Add(2, "", "phases")
	f.Add(2, "..", ".")
	f.Fuzz(func(t *testing.T, version int, unit, recorded string) {
		rel, err := unitRunDir(version, "/p1", pipelineLayout, unit, recorded)
		if err != nil {
			return
		}
		if rel != filepath.Join("phases", unit) || !filepath.IsLocal(rel) || filepath.Dir(rel) != "phases" {
			t.Fatalf("unitRunDir(%d, %q, %q) = %q: not the unit's own directory beneath the set", version, unit, recorded, rel)
		}
	})
}
