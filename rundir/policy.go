package rundir

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
)

// checkPolicy holds the policy files of a run that ended to its journal.
// policy-trace.json is the journal's policy.decision lines, in order,
// with their totals (the time of each is the gate's clock, not the
// line's, so it is not compared). policy-snapshot.json decodes as the
// schema has it, its digest is its content's, and the last segment's
// decisions name that digest.
func (st *State) checkPolicy(dir string, m record.Manifest) error {
	if m.Status == outcome.StatusRunning {
		return nil // written at a segment's end; a crash leaves the last ones
	}
	data, err := artifacts.ReadBeneath(dir, record.FilePolicyTrace)
	switch {
	case errors.Is(err, fs.ErrNotExist) && len(st.Decisions) == 0:
	case err != nil:
		return tampered("%s cannot be read (%v); the journal recorded %d policy decisions", record.FilePolicyTrace, err, len(st.Decisions))
	default:
		var t record.PolicyTrace
		if err := decodeStrict(data, record.TypePolicyTrace, &t); err != nil {
			return tampered("%s: %v", record.FilePolicyTrace, err)
		}
		want := map[string]int{}
		for k := range t.Totals {
			want[k] = 0
		}
		if len(t.Decisions) != len(st.Decisions) {
			return tampered("%s lists %d policy decisions; the journal recorded %d", record.FilePolicyTrace, len(t.Decisions), len(st.Decisions))
		}
		for i, d := range st.Decisions {
			got := t.Decisions[i]
			got.At = d.At
			if !sameJSON(got, d) {
				return tampered("%s's decision %d (call %s) is not the one the journal recorded", record.FilePolicyTrace, i+1, d.CallID)
			}
			want[d.Decision.Decision]++
		}
		if !sameJSON(t.Totals, want) {
			return tampered("%s's totals are not the count of its decisions", record.FilePolicyTrace)
		}
	}
	data, err = artifacts.ReadBeneath(dir, record.FilePolicySnapshot)
	last := st.Decisions[st.segmentDecisions:]
	switch {
	case errors.Is(err, fs.ErrNotExist) && len(st.Decisions) == 0:
		return nil
	case err != nil:
		return tampered("%s cannot be read (%v); the journal's policy decisions name it", record.FilePolicySnapshot, err)
	}
	var ps record.PolicySnapshot
	if err := decodeStrict(data, record.TypePolicySnapshot, &ps); err != nil {
		return tampered("%s: %v", record.FilePolicySnapshot, err)
	}
	digest := ps.Digest
	ps.Digest = ""
	b, err := json.Marshal(ps)
	if err != nil || artifacts.DigestBytes(b) != digest {
		return tampered("%s is not the snapshot its digest %s was taken of", record.FilePolicySnapshot, digest)
	}
	if len(last) > 0 && last[len(last)-1].SnapshotDigest != digest && !st.loadedSince(ps, last[len(last)-1].SnapshotDigest) {
		return tampered("%s has digest %s; the journal's decisions name %s", record.FilePolicySnapshot, digest, last[len(last)-1].SnapshotDigest)
	}
	return nil
}

// loadedSince reports whether ps (its digest cleared) is the snapshot the
// segment's decisions name, named, plus the skills loaded after it was
// taken. The snapshot is taken when the segment starts and written again
// at its end with every skill active then, so a skill the model loaded
// mid-run is in the file but not in the snapshot any decision named (the
// load_skill call is decided before the skill is active). Those skills
// must be the journal's activations since the segment's first decision,
// in order; with them left out, the rest must be the named snapshot.
func (st *State) loadedSince(ps record.PolicySnapshot, named artifacts.Digest) bool {
	k := st.segmentActivations
	if k > len(ps.LoadedSkills) || len(ps.LoadedSkills) != len(st.Activated) {
		return false
	}
	for i, s := range ps.LoadedSkills[k:] {
		a := st.Activated[k+i]
		if s.Name != a.Name || s.Digest != a.Digest || s.Source != a.Source {
			return false
		}
	}
	ps.LoadedSkills = ps.LoadedSkills[:k]
	b, err := json.Marshal(ps)
	return err == nil && artifacts.DigestBytes(b) == named
}

// decodeStrict decodes an artifact of type typ at this harness's version,
// refusing a field its schema lacks.
func decodeStrict(data []byte, typ string, v any) error {
	var env artifacts.Envelope
	if err := artifacts.DecodeArtifact(data, typ, record.Version, &env); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
