package pipeline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/outcome"
	"github.com/harness-dev/harness/record"
)

// checkResult holds the result file of a pipeline or batch directory to
// its verified journal: the file the last <kind>.finished or
// <kind>.summarized line recorded, byte for byte by digest (the seal
// covers that line), and every field of it as recomputed from the unit
// lines before it. A result file that is missing once the journal
// recorded one, that the journal never recorded, that does not decode or
// is of a version this harness does not know, is not what harness wrote.
// It also returns the result recomputed from the journal (nil: none was
// recorded, or the journal line does not decode).
func checkResult(dir string, l layout, m record.PipelineManifest, events []artifacts.Event) ([]string, *record.PipelineResult) {
	end, rec := -1, resultWritten{}
	for i := len(events) - 1; i >= 0; i-- {
		if t := events[i].Type; t == l.finished() || t == l.summarized() {
			if err := json.Unmarshal(events[i].Data, &rec); err != nil {
				return []string{fmt.Sprintf("journal line %d (%s) does not decode: %v", i+1, events[i].Type, err)}, nil
			}
			end = i
			break
		}
	}
	if end < 0 {
		if _, err := artifacts.ReadBeneath(dir, l.result); errors.Is(err, fs.ErrNotExist) {
			return nil, nil // nothing summed up yet
		}
		return []string{fmt.Sprintf("%s is there, but the journal never recorded writing one", l.result)}, nil
	}
	names := rec.Order
	if len(names) == 0 {
		names = manifestOrder(m, l)
	}
	units := recomputeUnits(l, events[:end], names, rec.Alone)
	want := summarize(l, m.Version, m.ID(), dir, units)
	data, err := artifacts.ReadBeneath(dir, l.result)
	if err != nil {
		return []string{fmt.Sprintf("%s cannot be read (%v); the journal recorded it at line %d", l.result, err, end+1)}, want
	}
	var got record.PipelineResult
	if err := decodeStrict(data, l.resultType, m.Version, &got); err != nil {
		return []string{fmt.Sprintf("%s cannot be read as harness wrote it: %v", l.result, err)}, want
	}
	if m.Version >= 2 || (got.Dir != dir && sameDir(got.Dir, dir)) {
		// Where the directory was when the file was written: it may have
		// been copied or moved since as a whole (version 2), or be
		// reached by another path. Only the digest can hold it.
		want = summarize(l, m.Version, m.ID(), got.Dir, units)
	}
	want.DurationMs = got.DurationMs // only the digest can hold it
	problems := differences(l, &got, want)
	if len(problems) == 0 && (rec.Status != want.Status || rec.ExitCode != want.ExitCode) {
		problems = append(problems, fmt.Sprintf("journal line %d says the %s ended %s (exit %d); its units give %s (exit %d)", end+1, l.kind, rec.Status, rec.ExitCode, want.Status, want.ExitCode))
	}
	if len(problems) == 0 && rec.ResultDigest != "" && artifacts.DigestBytes(data) != rec.ResultDigest {
		problems = append(problems, fmt.Sprintf("%s is not the file the journal recorded (digest %s, journal line %d %s)", l.result, artifacts.DigestBytes(data), end+1, rec.ResultDigest))
	}
	return problems, want
}

// decodeStrict decodes an artifact of type typ at a version this harness
// writes, refusing fields its schema does not have.
func decodeStrict(data []byte, typ string, version int, v *record.PipelineResult) error {
	var env artifacts.Envelope
	if err := json.Unmarshal(data, &env); err != nil {
		return err
	}
	if err := artifacts.DecodeArtifact(data, typ, version, &env); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("more than one JSON value")
	}
	return nil
}

// manifestOrder is the units in dependency order as the manifest
// declares them (a journal line that did not record its order).
func manifestOrder(m record.PipelineManifest, l layout) []string {
	decl := m.Phases
	if l.kind == "batch" {
		decl = m.Tasks
	}
	ps := make([]Phase, len(decl))
	for i, d := range decl {
		ps[i].Name, ps[i].Needs = d.Name, d.Needs
	}
	return order(ps)
}

// recomputeUnits is how each unit stood when the result was written,
// from the journal lines before it. A `--phase` process sums up each
// unit as last recorded; an execution (a run or a resume) sums up what it
// ran, reused, skipped, and left unstarted.
func recomputeUnits(l layout, events []artifacts.Event, names []string, alone bool) []record.PhaseOutcome {
	if alone {
		last := lastOutcomes(events, l.unitFinished())
		out := make([]record.PhaseOutcome, 0, len(names))
		for _, n := range names {
			if o := last[n]; o != nil {
				out = append(out, *o)
				continue
			}
			out = append(out, record.PhaseOutcome{Name: n, Status: statusNotStarted, Reason: "not_run", ExitCode: outcome.ExitInterrupted, Message: "not started: no pod has run it yet"})
		}
		return out
	}
	// The execution began at its last started or resumed line; a resume
	// wrote its drift and reused lines just before that.
	start := 0
	for i := len(events) - 1; i >= 0; i-- {
		if t := events[i].Type; t == l.started() || t == l.resumed() {
			start = i
			break
		}
	}
	before := start
	for before > 0 && (events[before-1].Type == l.unitReused() || events[before-1].Type == l.drift()) {
		before--
	}
	prior := lastOutcomes(events[:before], l.unitFinished())
	ran := lastOutcomes(events[start:], l.unitFinished())
	reused, skipped := map[string]bool{}, map[string]string{}
	for _, ev := range events[before:start] {
		if ev.Type == l.unitReused() {
			reused[unitOf(l, ev)] = true
		}
	}
	for _, ev := range events[start:] {
		if ev.Type == l.unitSkipped() {
			var d map[string]string
			if json.Unmarshal(ev.Data, &d) == nil {
				skipped[d[l.unit]] = d["because"]
			}
		}
	}
	done := map[string]record.PhaseOutcome{}
	out := make([]record.PhaseOutcome, 0, len(names))
	for _, n := range names {
		var o record.PhaseOutcome
		switch need, isSkipped := skipped[n]; {
		case ran[n] != nil:
			o = *ran[n]
		case reused[n] && prior[n] != nil:
			o = *prior[n]
			o.Reused = true
		case isSkipped:
			d := done[need]
			o = record.PhaseOutcome{Name: n, Status: statusSkipped, Reason: "dependency_failed", ExitCode: d.ExitCode,
				Message: fmt.Sprintf("not run: %s %s, which it needs, did not succeed (%s)", l.unit, need, d.Status)}
		default:
			o = record.PhaseOutcome{Name: n, Status: statusNotStarted, Reason: "interrupted", ExitCode: outcome.ExitInterrupted, Message: "not started: the pipeline stopped first"}
		}
		done[n] = o
		out = append(out, o)
	}
	return out
}

// unitOf is the unit a journal line names.
func unitOf(l layout, ev artifacts.Event) string {
	var d map[string]any
	json.Unmarshal(ev.Data, &d)
	s, _ := d[l.unit].(string)
	return s
}

// sameDir reports whether two paths name one directory.
func sameDir(a, b string) bool {
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

// differences names each field of the result file that is not the one
// recomputed from the journal, and for each unit each of its fields.
func differences(l layout, got, want *record.PipelineResult) []string {
	gm, wm := fieldsOf(got), fieldsOf(want)
	var out []string
	for _, k := range unionKeys(gm, wm) {
		if k == "phases" || k == "tasks" {
			continue
		}
		if !bytes.Equal(gm[k], wm[k]) {
			out = append(out, fmt.Sprintf("%s's %s is %s; the journal gives %s", l.result, k, shown(gm[k]), shown(wm[k])))
		}
	}
	gu, wu := append(got.Phases, got.Tasks...), append(want.Phases, want.Tasks...)
	if len(gu) != len(wu) {
		return append(out, fmt.Sprintf("%s lists %d %ss; the journal gives %d", l.result, len(gu), l.unit, len(wu)))
	}
	for i := range wu {
		g, w := fieldsOf(gu[i]), fieldsOf(wu[i])
		for _, k := range unionKeys(g, w) {
			if !bytes.Equal(g[k], w[k]) {
				out = append(out, fmt.Sprintf("%s's %s %s: its %s is %s; the journal gives %s", l.result, l.unit, wu[i].Name, k, shown(g[k]), shown(w[k])))
			}
		}
	}
	return out
}

func fieldsOf(v any) map[string]json.RawMessage {
	b, _ := json.Marshal(v)
	var m map[string]json.RawMessage
	json.Unmarshal(b, &m)
	return m
}

func unionKeys(a, b map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// shown is a JSON value as a message quotes it: a string bare, nothing
// as "absent", anything long cut short.
func shown(v json.RawMessage) string {
	if v == nil {
		return "absent"
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		v = json.RawMessage(s)
	}
	if out := string(v); len(out) <= 200 {
		return out
	}
	return strings.ToValidUTF8(string(v[:200]), "") + "..."
}
