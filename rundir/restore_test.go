package rundir

import (
	"errors"
	"io/fs"
	"testing"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/record"
)

// Only a tool output that a power cut can have lost is rebuilt from its
// journal line; every other mismatch stays a refusal.
func TestRestorableOutputs(t *testing.T) {
	file := `{"type":"harness.tool-output"}` + "\n"
	good := record.ToolFinished{CallID: "c1", Output: "tool-outputs/c1-read_file.json", OutputDigest: artifacts.DigestString(file), OutputBytes: file}
	missing := &fs.PathError{Op: "open", Path: good.Output, Err: fs.ErrNotExist}
	for _, tc := range []struct {
		name     string
		openTail int
		line     int
		change   func(*record.ToolFinished)
		data     []byte
		readErr  error
		want     string // "" when not restorable
	}{
		{"missing in the open segment", 5, 7, nil, nil, missing, "missing"},
		{"emptied in the open segment", 5, 7, nil, []byte{}, nil, "different"},
		{"intact", 5, 7, nil, []byte(file), nil, ""},
		{"in an ended segment", 9, 7, nil, nil, missing, ""},
		{"every segment ended", 0, 7, nil, nil, missing, ""},
		{"line carries no bytes", 5, 7, func(d *record.ToolFinished) { d.OutputBytes = "" }, nil, missing, ""},
		{"bytes are not the digest's", 5, 7, func(d *record.ToolFinished) { d.OutputBytes = `{"forged":1}` }, nil, missing, ""},
		{"a link in its place", 5, 7, nil, nil, artifacts.ErrOutsideDir, ""},
		{"path leaves the directory", 5, 7, func(d *record.ToolFinished) { d.Output = "tool-outputs/../run.json" }, nil, missing, ""},
		{"path elsewhere", 5, 7, func(d *record.ToolFinished) { d.Output = "journal.jsonl" }, nil, missing, ""},
		{"path deeper", 5, 7, func(d *record.ToolFinished) { d.Output = "tool-outputs/a/b.json" }, nil, missing, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := good
			if tc.change != nil {
				tc.change(&d)
			}
			st := &State{OpenTail: tc.openTail}
			r, ok := st.restorable(tc.line, d, tc.data, tc.readErr)
			switch {
			case tc.want == "" && ok:
				t.Fatalf("restored (%s)", r.Found)
			case tc.want != "" && !ok:
				t.Fatal("not restored")
			case ok && (r.Found != tc.want || string(r.Data) != file || r.Output != d.Output):
				t.Fatalf("restored %+v, want found %s", r, tc.want)
			}
		})
	}
	if !errors.Is(missing, fs.ErrNotExist) {
		t.Fatal("the missing case does not test a missing file")
	}
}
