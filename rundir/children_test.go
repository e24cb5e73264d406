package rundir

import (
	"testing"

	"github.com/harness-dev/harness/record"
)

// TestTakeChild: a parent's record of a child names the one place harness
// puts it, children/<its run id>, or the journal line is not harness's.
func TestTakeChild(t *testing.T) {
	for _, tc := range []struct {
		name, id, dir string
		ok            bool
	}{
		{"its own directory", "d1", "children/d1", true},
		{"another child's directory", "d1", "children/d2", false},
		{"leads outside", "d1", "children/../../d1", false},
		{"absolute", "d1", "/runs/p1/children/d1", false},
		{"an id of dots", "..", "children/..", false},
		{"an id with a separator", "a/b", "children/a/b", false},
		{"empty", "", "children", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &State{}
			err := st.takeChild(record.ChildEnded{ID: tc.id, Dir: tc.dir, JournalHead: "blake3:00"})
			if (err == nil) != tc.ok {
				t.Fatalf("takeChild(%q, %q) = %v, want ok %v", tc.id, tc.dir, err, tc.ok)
			}
		})
	}
}
