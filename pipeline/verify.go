package pipeline

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/harness-dev/harness/artifacts"
	"github.com/harness-dev/harness/record"
	"github.com/harness-dev/harness/rundir"
)

// Verification is how a pipeline or batch directory verified: its own
// journal (hash chain, seal), what it recorded of each unit (the unit's
// run directory verified as `harness verify` does, its result.json and
// answer file by digest), and its result file against the journal.
type Verification struct {
	Dir    string `json:"dir"`
	Kind   string `json:"kind"` // pipeline or batch
	ID     string `json:"id"`
	OK     bool   `json:"ok"`
	Sealed bool   `json:"sealed"`
	// SealChecked says the key was at hand and every line's seal matched.
	SealChecked bool `json:"sealChecked"`
	// Problems are what does not verify of the directory itself.
	Problems []string `json:"problems,omitempty"`
	// Recomputed is the result as the journal gives it, when the result
	// file is not that: what a reader shows instead of the file's word.
	Recomputed *record.PipelineResult `json:"-"`
	Units      []UnitVerification     `json:"units"`
}

// UnitVerification is one phase or task.
type UnitVerification struct {
	Name   string `json:"name"`
	RunDir string `json:"runDir,omitempty"`
	// Status is how the unit ended by its own verified run journal (the
	// pipeline journal's word when the unit never had a run).
	Status   string `json:"status"`
	ExitCode int    `json:"exitCode"`
	OK       bool   `json:"ok"`
	Problem  string `json:"problem,omitempty"`
	// Outcome is what the pipeline journal recorded last of the unit.
	Outcome record.PhaseOutcome `json:"-"`
	// Run is how the unit's run directory verified (nil: it has none, or
	// it could not be read).
	Run *rundir.Report `json:"-"`
}

// Verify checks a pipeline or batch directory without changing it. key is
// HARNESS_RUN_KEY: with it every line of the pipeline journal must carry
// its seal; without it a sealed journal is refused.
func Verify(dir string, key []byte) (*Verification, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	l := pipelineLayout
	if _, err := os.Stat(filepath.Join(abs, batchLayout.manifest)); err == nil {
		l = batchLayout
	}
	var m record.PipelineManifest
	data, err := artifacts.ReadBeneath(abs, l.manifest)
	if err == nil {
		err = artifacts.DecodeArtifact(data, l.manifestType, l.version, &m)
	}
	if err != nil {
		return nil, fmt.Errorf("%s is not a pipeline or batch directory: %w", dir, err)
	}
	v := &Verification{Dir: abs, Kind: l.kind, ID: m.ID(), Units: []UnitVerification{}}
	bad := func(format string, args ...any) { v.Problems = append(v.Problems, fmt.Sprintf(format, args...)) }
	events, err := readJournalOnly(abs, l, key)
	if err != nil {
		bad("%s", err)
	}
	if len(events) > 0 {
		v.Sealed = artifacts.Sealed(events[0].Raw)
		v.SealChecked = v.Sealed && err == nil && len(key) > 0
	}
	last := lastOutcomes(events, l.unitFinished())
	units := m.Phases
	if l.kind == "batch" {
		units = m.Tasks
	}
	for _, u := range units {
		o, ok := last[u.Name]
		if !ok {
			continue // never finished: nothing recorded to check
		}
		uv := UnitVerification{Name: u.Name, Status: o.Status, ExitCode: o.ExitCode, OK: true, Outcome: *o}
		fail := func(format string, args ...any) {
			if uv.OK {
				uv.OK, uv.Problem = false, fmt.Sprintf(format, args...)
			}
		}
		if o.RunDir != "" {
			checkUnitRun(abs, m.Version, l, o, key, &uv, fail)
		}
		if o.AnswerDigest != "" {
			if b, err := artifacts.ReadBeneath(abs, filepath.Join(record.DirAnswers, u.Name+".md")); err != nil || artifacts.DigestBytes(b) != o.AnswerDigest {
				fail("its answer file %s/%s.md is not the one it wrote", record.DirAnswers, u.Name)
			}
		}
		v.Units = append(v.Units, uv)
	}
	if err == nil {
		problems, want := checkResult(abs, l, m, events)
		if len(problems) > 0 {
			v.Problems, v.Recomputed = append(v.Problems, problems...), want
		}
	}
	v.OK = len(v.Problems) == 0
	for _, u := range v.Units {
		v.OK = v.OK && u.OK
	}
	return v, nil
}

// resultStatus is a run's status in result.json's words.
func resultStatus(f *record.RunFinished) string {
	if f.Result != nil {
		return f.Result.Status
	}
	return f.Status
}

// checkUnitRun verifies the run directory the journal recorded for a
// unit, as `harness verify` does, opened once beneath the directory dir
// and read through that descriptor, and holds it to what the journal
// recorded of it: where it is, whose run it is, how it ended, its
// result.json.
func checkUnitRun(dir string, version int, l layout, o *record.PhaseOutcome, key []byte, uv *UnitVerification, fail func(string, ...any)) {
	rel, err := unitRunDir(version, dir, l, o.Name, o.RunDir)
	if err != nil {
		fail("the journal's path of its run directory, %s, %v", o.RunDir, err)
		return
	}
	uv.RunDir = filepath.Join(dir, rel)
	u, err := openUnitRun(dir, rel)
	var linked *linkError
	switch {
	case errors.As(err, &linked):
		fail("its run directory %s %v", uv.RunDir, err)
		return
	case err != nil:
		fail("its run directory is missing or unreadable: %v", err)
		return
	}
	defer u.Close()
	rep, err := u.verify(key)
	switch {
	case err != nil:
		fail("its run directory is missing or unreadable: %v", err)
	case !rep.OK:
		uv.Run = rep
		fail("its run does not verify: %s: %s", rep.Problem.Code, rep.Problem.Message)
	default:
		uv.Run = rep
		if err := checkIdentity(version, o, rep); err != nil {
			fail("its run directory %s %v", uv.RunDir, err)
		}
		if rep.Finished != nil {
			uv.Status, uv.ExitCode = resultStatus(rep.Finished), rep.Finished.ExitCode
			if o.Status != uv.Status && !o.Reused {
				fail("the %s journal says %s, its run's journal says %s", l.kind, o.Status, uv.Status)
			}
		}
	}
	if o.ResultDigest != "" {
		if b, err := u.read(record.FileResult); err != nil || artifacts.DigestBytes(b) != o.ResultDigest {
			fail("its result.json is not the one the %s journal recorded", l.kind)
		}
	}
}

// openJournal opens the journal of the pipeline or batch directory dir
// as every file of a run directory is opened: beneath dir, through no
// link, and only if it is a regular file (a FIFO is refused, never
// waited on).
func openJournal(dir string, l layout) (*os.File, error) {
	f, err := artifacts.OpenBeneath(dir, l.journal, os.O_RDONLY, 0)
	if errors.Is(err, artifacts.ErrOutsideDir) {
		return nil, fmt.Errorf("%s is a symbolic link or leads outside the %s directory (harness writes only regular files there)", l.journal, l.kind)
	}
	return f, err
}

// afterEnd is the refusal for bytes after the journal's finished event:
// harness writes nothing after it, so they are not a crash's torn line.
func afterEnd(c artifacts.JournalContents, l layout) error {
	if c.TornTail && len(c.Events) > 0 && c.Events[len(c.Events)-1].Type == l.finished() {
		return fmt.Errorf("%d bytes follow the journal's %s line: harness writes nothing after a %s's end", c.TornBytes, l.finished(), l.kind)
	}
	return nil
}

// readJournalOnly reads and checks a pipeline journal without repairing
// it: a torn last line (a crash) is left out, a broken chain or seal is an
// error, and so is anything after the finished event.
func readJournalOnly(dir string, l layout, key []byte) ([]artifacts.Event, error) {
	f, err := openJournal(dir, l)
	if err != nil {
		return nil, fmt.Errorf("journal: %v", err)
	}
	c, err := rundir.ReadJournal(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("the journal cannot be read: %v", err)
	}
	if err := afterEnd(c, l); err != nil {
		return c.Events, err
	}
	if len(key) == 0 && len(c.Events) > 0 && artifacts.Sealed(c.Events[0].Raw) {
		return c.Events, fmt.Errorf("the journal is sealed: set HARNESS_RUN_KEY to the key it was written with to verify it")
	}
	if _, err := artifacts.VerifyChain(c.Events, key); err != nil {
		return c.Events, fmt.Errorf("the journal fails its hash chain: %v", err)
	}
	return c.Events, nil
}

// MarshalJSON lists problems as an empty list rather than null.
func (v Verification) MarshalJSON() ([]byte, error) {
	type plain Verification
	if v.Problems == nil {
		v.Problems = []string{}
	}
	return json.Marshal(plain(v))
}
