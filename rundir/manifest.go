package rundir

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
)

// run.json is what a reader reads first and what resume starts from; the
// journal is what the run recorded. These hold the one to the other.

// checkEnd holds run.json's account of how the last segment ended to the
// journal: a segment that ended (any status but running) ended the
// journal with its run.finished, and run.json recorded that line as the
// head. Lines after it were not written by the run.
func checkEnd(events []artifacts.Event, m record.Manifest, head artifacts.Digest) error {
	last := events[len(events)-1]
	if m.Status == outcome.StatusRunning {
		// A crash: the segment's tail has no run.finished. The head
		// recorded at the previous segment's end must still be in the chain.
		if m.JournalHead == "" {
			return nil
		}
		for _, ev := range events {
			if artifacts.DigestBytes(ev.Raw) == m.JournalHead {
				return nil
			}
		}
		return tampered("run.json's journal head %s is not a line of the journal", m.JournalHead)
	}
	if last.Type != record.EventRunFinished {
		return tampered("run.json says the run ended (%s), but the journal goes on after its last run.finished (line %d is %s)", m.Status, last.Seq, last.Type)
	}
	var fin record.RunFinished
	if err := json.Unmarshal(last.Data, &fin); err != nil || fin.Status != m.Status {
		return tampered("run.json's status %s is not the status the journal ended with (%s)", m.Status, fin.Status)
	}
	if m.JournalHead != head {
		return tampered("run.json's journal head is not the journal's last line")
	}
	return nil
}

// differingInput names the first part of run.json's inputs that is not
// what run.created recorded. Tools and the probed sandbox are filled in
// after creation; they are recomputed on resume, not trusted.
func differingInput(created record.RunCreated, m record.Manifest) string {
	a, b := created.Inputs, m.Inputs
	a.Tools, b.Tools = nil, nil
	a.Sandbox, b.Sandbox = requestedOnly(a.Sandbox), requestedOnly(b.Sandbox)
	if created.RunID != m.RunID {
		return "run id"
	}
	var am, bm map[string]json.RawMessage
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	json.Unmarshal(ja, &am)
	json.Unmarshal(jb, &bm)
	keys := make([]string, 0, len(am)+len(bm))
	for k := range am {
		keys = append(keys, k)
	}
	for k := range bm {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range slices.Compact(keys) {
		if !bytes.Equal(am[k], bm[k]) {
			return "inputs." + k
		}
	}
	if !sameJSON(created.Sources, m.Sources) {
		return "sources"
	}
	if !sameJSON(created.Outputs, m.Outputs) {
		return "outputs"
	}
	return ""
}

func requestedOnly(s *record.SandboxRecord) *record.SandboxRecord {
	if s == nil {
		return nil
	}
	return &record.SandboxRecord{Requested: s.Requested}
}

func sameJSON(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}
